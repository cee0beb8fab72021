//! Reading a trace's bytes. Decompressing gzip costs about as much as scanning what it
//! yields, so a gzip stream is read on a thread of its own, a few chunks ahead of the scanner
//! ([`ReadAhead`]).

use std::io::Read;
use std::sync::mpsc::{self, Receiver, Sender};

/// Reads from a slow source (a gzip stream) on a thread of its own, a few chunks ahead, so
/// that decompressing and scanning overlap. Chunk buffers go back and forth between the two
/// threads; the reading thread stops when this side is dropped, and the drop waits for it, so
/// that it does not outlive the import (an import that fails early drops it unfinished).
pub(super) struct ReadAhead {
    full: Receiver<std::io::Result<Vec<u8>>>,
    empty: Sender<Vec<u8>>,
    current: Vec<u8>,
    pos: usize,
    done: bool,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl ReadAhead {
    const CHUNK: usize = 1 << 20;
    const CHUNKS: usize = 3;

    pub(super) fn spawn<R: Read + Send + 'static>(mut source: R) -> ReadAhead {
        let (full_tx, full) = mpsc::sync_channel(Self::CHUNKS);
        let (empty, empty_rx) = mpsc::channel::<Vec<u8>>();
        for _ in 0..Self::CHUNKS {
            empty
                .send(vec![0; Self::CHUNK])
                .expect("the receiver is alive");
        }
        let thread = std::thread::spawn(move || {
            while let Ok(mut chunk) = empty_rx.recv() {
                chunk.resize(Self::CHUNK, 0);
                let read = read_up_to(&mut source, &mut chunk).map(|n| {
                    chunk.truncate(n);
                    chunk
                });
                let last = matches!(&read, Ok(c) if c.is_empty()) || read.is_err();
                if full_tx.send(read).is_err() || last {
                    return;
                }
            }
        });
        ReadAhead {
            full,
            empty,
            current: Vec::new(),
            pos: 0,
            done: false,
            thread: Some(thread),
        }
    }
}

impl Drop for ReadAhead {
    fn drop(&mut self) {
        // The channels go first: the thread then stops at its next chunk, whichever end of
        // them it waits on (a chunk in the middle of decompressing is finished first).
        self.full = mpsc::sync_channel(0).1;
        self.empty = mpsc::channel().0;
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Read for ReadAhead {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        while self.pos == self.current.len() {
            if self.done {
                return Ok(0);
            }
            let next = self.full.recv().unwrap_or_else(|_| {
                Err(std::io::Error::other("the decompressing thread stopped"))
            })?;
            self.done = next.is_empty();
            let spent = std::mem::replace(&mut self.current, next);
            self.pos = 0;
            // The reader may have finished already; then the buffer is simply dropped.
            let _ = self.empty.send(spent);
        }
        let n = out.len().min(self.current.len() - self.pos);
        out[..n].copy_from_slice(&self.current[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
}

pub(super) fn read_up_to(file: &mut impl Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        match file.read(&mut buf[filled..])? {
            0 => break,
            n => filled += n,
        }
    }
    Ok(filled)
}

#[cfg(test)]
mod tests {
    use super::super::read_trace;
    use super::*;
    use crate::import::trace::TraceSelection;

    /// Fails after handing out `ok` bytes.
    struct FailsAfter {
        ok: usize,
    }

    impl Read for FailsAfter {
        fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
            if self.ok == 0 {
                return Err(std::io::Error::other("disk on fire"));
            }
            let n = out.len().min(self.ok);
            out[..n].fill(b' ');
            self.ok -= n;
            Ok(n)
        }
    }

    /// An endless source that says when it is let go.
    struct Endless(std::sync::Arc<std::sync::atomic::AtomicBool>);

    impl Read for Endless {
        fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
            out.fill(b' ');
            Ok(out.len())
        }
    }

    impl Drop for Endless {
        fn drop(&mut self) {
            self.0.store(true, std::sync::atomic::Ordering::SeqCst);
        }
    }

    /// A reader dropped part way, as a failed import drops it, has stopped its thread (which
    /// owns the source) by the time the drop returns, even with chunks still to read.
    #[test]
    fn read_ahead_dropped_part_way_stops_its_thread() {
        let let_go = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let mut ahead = ReadAhead::spawn(Endless(let_go.clone()));
        let mut some = [0u8; 100];
        ahead.read_exact(&mut some).unwrap();
        drop(ahead);
        assert!(let_go.load(std::sync::atomic::Ordering::SeqCst));
    }

    #[test]
    fn read_ahead_hands_over_every_byte_and_the_source_error() {
        let mut rng = fastrand::Rng::with_seed(9);
        let bytes: Vec<u8> = (0..3 * ReadAhead::CHUNK + 12345)
            .map(|_| rng.u8(..))
            .collect();
        let mut copy = Vec::new();
        let mut ahead = ReadAhead::spawn(std::io::Cursor::new(bytes.clone()));
        ahead.read_to_end(&mut copy).unwrap();
        assert_eq!(copy, bytes);
        let mut sink = Vec::new();
        let mut failing = ReadAhead::spawn(FailsAfter {
            ok: 2 * ReadAhead::CHUNK + 7,
        });
        let err = failing.read_to_end(&mut sink).unwrap_err();
        assert_eq!(err.to_string(), "disk on fire");
        assert_eq!(sink.len(), 2 * ReadAhead::CHUNK);
        // A trace read through it fails with the position of the failed read.
        let failing = ReadAhead::spawn(FailsAfter { ok: 100 });
        let err = read_trace(failing, &TraceSelection::default()).unwrap_err();
        assert_eq!(err, "read failed at byte 0: disk on fire");
    }
}
