//! Path templates: a path with its integer fields taken out, keeping zero-padded widths.
//!
//! `out/file.00000012` becomes the template `out/file.%08d` with the field `12`; `dir/file_3`
//! becomes `dir/file_%d` with `3`. The template is part of an event's structure and the fields
//! are ordinary elastic parameters, so `file_<rank>` compresses to one affine value.

use serde::{Deserialize, Serialize};

/// Longest digit run turned into a field; longer runs (hashes, timestamps) stay literal so the
/// value fits in an i64.
const MAX_FIELD_DIGITS: usize = 18;

/// A path with `%d` / `%0Nd` placeholders (and `%%` for a literal `%`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct PathTemplate(pub String);

impl PathTemplate {
    /// Splits a concrete path into a template and its fields.
    pub fn parse(path: &str) -> (PathTemplate, Vec<i64>) {
        let b = path.as_bytes();
        let mut t = String::with_capacity(path.len() + 4);
        let mut fields = Vec::new();
        let mut i = 0;
        while i < b.len() {
            if b[i].is_ascii_digit() {
                let mut j = i;
                while j < b.len() && b[j].is_ascii_digit() {
                    j += 1;
                }
                let run = &path[i..j];
                if run.len() <= MAX_FIELD_DIGITS {
                    let v: i64 = run.parse().unwrap_or(0);
                    if run.len() > 1 && run.starts_with('0') {
                        t.push_str(&format!("%0{}d", run.len()));
                    } else {
                        t.push_str("%d");
                    }
                    fields.push(v);
                } else {
                    t.push_str(run);
                }
                i = j;
            } else {
                let c = path[i..].chars().next().unwrap_or('?');
                if c == '%' {
                    t.push_str("%%");
                } else {
                    t.push(c);
                }
                i += c.len_utf8();
            }
        }
        (PathTemplate(t), fields)
    }

    /// Number of fields the template takes.
    pub fn nfields(&self) -> usize {
        let b = self.0.as_bytes();
        let mut n = 0;
        let mut i = 0;
        while i < b.len() {
            if b[i] == b'%' {
                if b.get(i + 1) == Some(&b'%') {
                    i += 2;
                    continue;
                }
                n += 1;
            }
            i += 1;
        }
        n
    }

    /// Fills in the fields. Missing fields print as 0; a corrupt template never panics.
    pub fn render(&self, fields: &[i64]) -> String {
        let s = &self.0;
        let mut out = String::with_capacity(s.len() + 8);
        let mut it = fields.iter();
        let mut chars = s.char_indices().peekable();
        while let Some((_, c)) = chars.next() {
            if c != '%' {
                out.push(c);
                continue;
            }
            if let Some(&(_, '%')) = chars.peek() {
                chars.next();
                out.push('%');
                continue;
            }
            let mut width = 0usize;
            while let Some(&(_, d)) = chars.peek() {
                if let Some(v) = d.to_digit(10) {
                    width = (width * 10 + v as usize).min(64);
                    chars.next();
                } else {
                    break;
                }
            }
            if let Some(&(_, 'd')) = chars.peek() {
                chars.next();
            }
            let v = it.next().copied().unwrap_or(0);
            out.push_str(&format!("{v:0width$}"));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn examples() {
        let (t, f) = PathTemplate::parse("out/file.00000012");
        assert_eq!(t.0, "out/file.%08d");
        assert_eq!(f, vec![12]);
        let (t, f) = PathTemplate::parse("dir/file_3.dat");
        assert_eq!(t.0, "dir/file_%d.dat");
        assert_eq!(f, vec![3]);
        assert_eq!(t.render(&[10]), "dir/file_10.dat");
        let (t, f) = PathTemplate::parse("/a%b/0/x");
        assert_eq!(t.0, "/a%%b/%d/x");
        assert_eq!(t.render(&f), "/a%b/0/x");
        assert_eq!(t.nfields(), 1);
    }

    proptest! {
        #[test]
        fn roundtrip(p in "[a-z0-9_%./é]{0,40}") {
            let (t, f) = PathTemplate::parse(&p);
            prop_assert_eq!(t.nfields(), f.len());
            prop_assert_eq!(t.render(&f), p);
        }
    }
}
