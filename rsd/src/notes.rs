//! Header notes said of ranks: those every rank makes folded into one (`ranks 0-31: TEXT`),
//! so the header does not grow with the rank count, and said again at another scale.

/// `[1, 2, 3, 7]` -> `1-3, 7`.
pub fn rank_ranges(ranks: &[u32]) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut i = 0;
    while i < ranks.len() {
        let mut j = i;
        while j + 1 < ranks.len() && ranks[j + 1] == ranks[j] + 1 {
            j += 1;
        }
        parts.push(if j > i {
            format!("{}-{}", ranks[i], ranks[j])
        } else {
            ranks[i].to_string()
        });
        i = j + 1;
    }
    parts.join(", ")
}

/// Notes that say the same of several ranks (`rank 3: TEXT`, each rank's own, joined in the
/// merge) as one note per text (`ranks 0-31: TEXT`), in the order the texts first appear:
/// a note every rank makes (the asynchronous requests a library issued) would otherwise grow
/// the header with the rank count. A text only one rank said keeps its `rank N: ` form;
/// other notes are kept as they are, in place.
pub fn fold_rank_notes(notes: &[String]) -> Vec<String> {
    fn split(n: &str) -> Option<(u32, &str)> {
        let (r, text) = n.strip_prefix("rank ")?.split_once(": ")?;
        Some((r.parse().ok()?, text))
    }
    let mut texts: Vec<(&str, Vec<u32>)> = Vec::new();
    let mut out: Vec<Result<String, usize>> = Vec::new();
    for n in notes {
        match split(n) {
            Some((r, text)) => match texts.iter().position(|(t, _)| *t == text) {
                Some(i) => texts[i].1.push(r),
                None => {
                    out.push(Err(texts.len()));
                    texts.push((text, vec![r]));
                }
            },
            None => out.push(Ok(n.clone())),
        }
    }
    out.into_iter()
        .map(|o| match o {
            Ok(n) => n,
            Err(i) => {
                let (text, ranks) = &mut texts[i];
                ranks.sort_unstable();
                ranks.dedup();
                match ranks.as_slice() {
                    [r] => format!("rank {r}: {text}"),
                    _ => format!("ranks {}: {text}", rank_ranges(ranks)),
                }
            }
        })
        .collect()
}

/// A note [`fold_rank_notes`] made of every one of `nranks` ranks (`ranks 0-15: TEXT`), said
/// of every one of `target` ranks; any other note unchanged. Extrapolation keeps the largest
/// input's notes, and a note all its ranks made is one all the target's ranks make.
pub fn note_at_scale(note: &str, nranks: u32, target: u32) -> String {
    let all = match nranks {
        0 => return note.to_string(),
        1 => "rank 0: ".to_string(),
        n => format!("ranks 0-{}: ", n - 1),
    };
    match note.strip_prefix(&all) {
        Some(text) if target > 1 => format!("ranks 0-{}: {text}", target - 1),
        Some(text) => format!("rank 0: {text}"),
        None => note.to_string(),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn rank_notes_fold_per_text() {
        let n = |s: &str| s.to_string();
        let notes = [
            n("rank 0: 8 requests"),
            n("HDF5 library 1.10.8"),
            n("rank 2: 8 requests"),
            n("rank 1: 3 requests"),
            n("rank 1: 8 requests"),
            n("rank 7: merge failed"),
        ];
        assert_eq!(
            super::fold_rank_notes(&notes),
            [
                "ranks 0-2: 8 requests",
                "HDF5 library 1.10.8",
                "rank 1: 3 requests",
                "rank 7: merge failed"
            ]
        );
        assert!(super::fold_rank_notes(&[]).is_empty());
        assert_eq!(
            super::note_at_scale("ranks 0-15: 8 requests", 16, 64),
            "ranks 0-63: 8 requests"
        );
        assert_eq!(
            super::note_at_scale("ranks 0-7: 8 requests", 16, 64),
            "ranks 0-7: 8 requests"
        );
        assert_eq!(super::note_at_scale("HDF5 1.10", 16, 64), "HDF5 1.10");
    }

    #[test]
    fn rank_ranges_fold_runs() {
        assert_eq!(super::rank_ranges(&[1, 2, 3, 7, 9, 10]), "1-3, 7, 9-10");
        assert_eq!(super::rank_ranges(&[]), "");
    }
}
