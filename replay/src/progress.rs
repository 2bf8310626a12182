//! A progress bar for long replays, drawn on a terminal only: rank 0's calls done out of its
//! total. The replaying rank only stores its count into an atomic every few hundred calls (no
//! drawing, no shared cache line written per call); a separate thread draws.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use rsd::trace::{Node, visit};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

/// Calls between two updates of the shared count.
pub const EVERY: u64 = 64;

/// The top-level calls `rank` makes in `nodes` (walked lazily, nothing materialised).
pub fn calls_of(nodes: &[Node], rank: u32) -> u64 {
    let mut n = 0u64;
    visit(nodes, rank, &mut Vec::new(), &mut |_, _| {
        n += 1;
        true
    });
    n
}

/// A drawing thread; stops and clears the bar when dropped.
pub struct Progress {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Progress {
    /// Starts a bar of `total()` calls fed by `done`, when standard error is a terminal and
    /// the replay is long enough to watch (otherwise nothing is drawn and `None` is returned).
    /// `total` is only called for a terminal: counting walks every call of the rank.
    pub fn start(
        total: impl FnOnce() -> u64,
        done: Arc<AtomicU64>,
        what: &str,
    ) -> Option<Progress> {
        if !std::io::IsTerminal::is_terminal(&std::io::stderr()) || std::env::var_os("CI").is_some()
        {
            return None;
        }
        let total = total();
        if total < 1000 {
            return None;
        }
        let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
        bar.set_style(
            ProgressStyle::with_template(&format!(
                "replaying {what} {{bar:40}} {{human_pos}}/{{human_len}} calls {{elapsed}} (eta {{eta}})"
            ))
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        let stop = Arc::new(AtomicBool::new(false));
        let s = stop.clone();
        let thread = std::thread::Builder::new()
            .name("progress".into())
            .spawn(move || {
                while !s.load(Ordering::Relaxed) {
                    bar.set_position(done.load(Ordering::Relaxed).min(total));
                    std::thread::sleep(Duration::from_millis(200));
                }
                bar.finish_and_clear();
            })
            .ok()?;
        Some(Progress {
            stop,
            thread: Some(thread),
        })
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rsd::trace::RawEvent;
    use rsd::{Compressor, Op};

    #[test]
    fn counts_a_ranks_calls_through_loops() {
        let mut c = Compressor::new(0);
        for i in 0..1000 {
            c.push(&RawEvent::new(Op::Pwrite, 7, vec![3, 8, i * 8, 8]));
            c.push(&RawEvent::new(Op::Fsync, 8, vec![3]));
        }
        let t = c.finish();
        assert_eq!(calls_of(&t.nodes, 0), 2000);
        assert_eq!(calls_of(&t.nodes, 1), 0, "rank 1 has no calls here");
    }
}
