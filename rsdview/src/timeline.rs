//! A rank's timeline rebuilt from timing statistics, for the exports that need timestamps
//! (Chrome, Parquet, OTF2): a trace keeps each event's gap and duration as statistics, not
//! per-call times. A call starts its event's mean gap after the previous call ended and lasts
//! its mean duration; the calls made inside a call are laid out the same way from the
//! call's start, clipped to its span.

use rsd::timing::Timing;

/// Where the next call of one level goes.
#[derive(Debug, Clone, Copy)]
pub struct Cursor {
    /// End of the previous call (the enclosing call's start before the first).
    t: f64,
    /// End of the enclosing call's span; `None` at the top level.
    end: Option<f64>,
    /// Divisor from ns to the caller's unit (1 for ns, 1e3 for microseconds).
    unit: f64,
}

impl Cursor {
    /// The top level of a rank, times in ns divided by `unit`.
    pub fn top(unit: f64) -> Cursor {
        Cursor {
            t: 0.0,
            end: None,
            unit,
        }
    }

    /// The calls made inside a call placed at (`start`, `dur`) by `self`.
    pub fn inside(&self, start: f64, dur: f64) -> Cursor {
        Cursor::within(start, dur, self.unit)
    }

    /// The calls made inside a call at (`start`, `dur`), times in ns divided by `unit`.
    pub fn within(start: f64, dur: f64, unit: f64) -> Cursor {
        Cursor {
            t: start,
            end: Some(start + dur),
            unit,
        }
    }

    /// Places the next call, of timing `t`: its (start, duration).
    pub fn place(&mut self, t: &Timing) -> (f64, f64) {
        let (gap, dur) = (t.gap.mean / self.unit, t.dur.mean / self.unit);
        let (s, d) = match self.end {
            None => (self.t + gap, dur),
            Some(end) => {
                let s = (self.t + gap).min(end);
                (s, dur.min(end - s).max(0.0))
            }
        };
        self.t = s + d;
        (s, d)
    }
}
