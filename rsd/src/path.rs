//! Path templates: a path with its integer fields taken out, keeping zero-padded widths.
//!
//! `out/file.00000012` becomes the template `out/file.%08d` with the field `12`; `dir/file_3`
//! becomes `dir/file_%d` with `3`. The template is part of an event's structure and the fields
//! are ordinary elastic parameters, so `file_<rank>` compresses to one affine value.
//!
//! The calling rank's host name, where the tracer found it in a path as a whole token
//! ([`PathTemplate::parse_on`]), is [`HOST`] (`%h`) in the template: a run value that is
//! not a number, filled by the consumers that issue calls with their own rank's host name
//! ([`PathTemplate::on_host`]; format minor [`crate::format::HOST_MINOR`]). Until filled, a
//! rendered path holds `%h` itself, which [`PathTemplate::parse`] reads back as the host.

use serde::{Deserialize, Serialize};

/// Longest digit run turned into a field; longer runs (hashes, timestamps) stay literal so the
/// value fits in an i64.
const MAX_FIELD_DIGITS: usize = 18;

/// The calling rank's host name in a template, and in a path rendered from it before a
/// consumer filled it ([`PathTemplate::on_host`]). A concrete path that holds `%h` itself
/// reads as the host too: a URL-encoded name never does (`h` is no hex digit).
pub const HOST: &str = "%h";

/// Host names shorter than this are not matched in paths: a short name (`n1`, `a`) is too
/// likely a word of the program's own.
pub const MIN_HOST_LEN: usize = 3;

/// A path with `%d` / `%0Nd` placeholders, [`HOST`] for the rank's host name (and `%%` for a
/// literal `%`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct PathTemplate(pub String);

/// A number taken out of a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Field {
    /// The number.
    pub value: i64,
    /// Letters on both sides (`b2284bs`): a piece of a random name (a temporary directory's
    /// suffix) rather than a number the program put there, so never one of the run's own ids
    /// ([`crate::runvalue::RunIds`]), which programs set off with punctuation (`log.4711`,
    /// `f-4711.lock`, `pid4711.`).
    pub in_word: bool,
}

/// Whether `host` is at byte `i` of `path` as a whole token: bounded by the path's ends or
/// by characters that are not ASCII letters or digits (`out.node3.7`, `node3/lock`, never
/// `mynode3` nor `node31`).
fn host_at(path: &str, i: usize, host: &str) -> bool {
    let b = path.as_bytes();
    path[i..].starts_with(host)
        && (i == 0 || !b[i - 1].is_ascii_alphanumeric())
        && b.get(i + host.len())
            .is_none_or(|c| !c.is_ascii_alphanumeric())
}

impl PathTemplate {
    /// Splits a concrete path into a template and its fields.
    pub fn parse(path: &str) -> (PathTemplate, Vec<i64>) {
        PathTemplate::parse_on(path, None)
    }

    /// [`PathTemplate::parse`], with every whole-token occurrence of `host` (the calling
    /// rank's host name, ignored when shorter than [`MIN_HOST_LEN`]) made [`HOST`].
    pub fn parse_on(path: &str, host: Option<&str>) -> (PathTemplate, Vec<i64>) {
        let (t, fields) = PathTemplate::parse_fields_on(path, host);
        (t, fields.into_iter().map(|f| f.value).collect())
    }

    /// [`PathTemplate::parse_on`], each field with where it stood ([`Field::in_word`]).
    pub fn parse_fields_on(path: &str, host: Option<&str>) -> (PathTemplate, Vec<Field>) {
        let host = host.filter(|h| h.len() >= MIN_HOST_LEN);
        let b = path.as_bytes();
        let mut t = String::with_capacity(path.len() + 4);
        let mut fields = Vec::new();
        let mut i = 0;
        while i < b.len() {
            if path[i..].starts_with(HOST) {
                t.push_str(HOST);
                i += HOST.len();
            } else if let Some(h) = host.filter(|h| host_at(path, i, h)) {
                t.push_str(HOST);
                i += h.len();
            } else if b[i].is_ascii_digit() {
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
                    let letter = |k: Option<&u8>| k.is_some_and(u8::is_ascii_alphabetic);
                    fields.push(Field {
                        value: v,
                        in_word: i > 0 && letter(b.get(i - 1)) && letter(b.get(j)),
                    });
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

    /// Number of fields the template takes ([`HOST`] is none).
    pub fn nfields(&self) -> usize {
        let b = self.0.as_bytes();
        let mut n = 0;
        let mut i = 0;
        while i < b.len() {
            if b[i] == b'%' {
                if matches!(b.get(i + 1), Some(b'%' | b'h')) {
                    i += 2;
                    continue;
                }
                n += 1;
            }
            i += 1;
        }
        n
    }

    /// Where the template holds [`HOST`]: byte offsets of each.
    fn hosts(&self) -> Vec<usize> {
        let b = self.0.as_bytes();
        let (mut out, mut i) = (Vec::new(), 0);
        while i < b.len() {
            if b[i] == b'%' {
                if b.get(i + 1) == Some(&b'h') {
                    out.push(i);
                }
                i += 2;
            } else {
                i += 1;
            }
        }
        out
    }

    /// Whether the template holds the rank's host name ([`HOST`]).
    pub fn holds_host(&self) -> bool {
        !self.hosts().is_empty()
    }

    /// The template with [`HOST`] made `host` (a consumer's own rank's host name; a `%` in
    /// it is kept literal).
    pub fn on_host(&self, host: &str) -> PathTemplate {
        let mut out = String::with_capacity(self.0.len() + host.len());
        let mut last = 0;
        for at in self.hosts() {
            out.push_str(&self.0[last..at]);
            out.push_str(&host.replace('%', "%%"));
            last = at + HOST.len();
        }
        out.push_str(&self.0[last..]);
        PathTemplate(out)
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
            if let Some(&(_, 'h')) = chars.peek() {
                chars.next();
                out.push_str(HOST);
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

    #[test]
    fn a_host_name_is_matched_as_a_whole_token_only() {
        let on = |p: &str| PathTemplate::parse_on(p, Some("node3"));
        let (t, f) = on("/d/out.node3.7.dat");
        assert_eq!((t.0.as_str(), f.as_slice()), ("/d/out.%h.%d.dat", &[7][..]));
        assert!(t.holds_host());
        assert_eq!(t.nfields(), 1);
        // Rendered before it is filled, the path holds %h, which parses back as the host.
        assert_eq!(t.render(&f), "/d/out.%h.7.dat");
        assert_eq!(PathTemplate::parse(&t.render(&f)).0, t);
        assert_eq!(t.on_host("node12").render(&f), "/d/out.node12.7.dat");
        assert_eq!(on("node3/lock").0.0, "%h/lock");
        assert_eq!(on("/x/node3").0.0, "/x/%h");
        // Inside a longer word or number: not the host.
        assert_eq!(on("/d/mynode3.dat").0.0, "/d/mynode%d.dat");
        assert_eq!(on("/d/node31.dat").0.0, "/d/node%d.dat");
        // A short host name is never matched; a literal %% stays one.
        assert_eq!(
            PathTemplate::parse_on("/d/n1.dat", Some("n1")).0.0,
            "/d/n%d.dat"
        );
        let (t, f) = on("/a%b/node3");
        assert_eq!(t.0, "/a%%b/%h");
        assert_eq!(t.on_host("z%").render(&f), "/a%b/z%");
        assert!(!PathTemplate::parse("/a/b").0.holds_host());
    }

    #[test]
    fn a_number_with_letters_on_both_sides_is_in_a_word() {
        let words = |p: &str| -> Vec<bool> {
            let (_, f) = PathTemplate::parse_fields_on(p, None);
            f.iter().map(|f| f.in_word).collect()
        };
        assert_eq!(words("/dev/shm/iotrex-b2284bsLK/x.7"), [true, false]);
        assert_eq!(words("pid4711.x/f-4711.lock/a4711"), [false, false, false]);
        assert_eq!(words("4711b/h5oracle"), [false, true]);
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
