//! Bounded capture of a command's output: every byte goes to a spill file as it arrives, memory
//! keeps only a head and a tail window, so a command printing gigabytes costs kilobytes.
//!
//! A foreground command's capture is *lazy*: its first [`SPILL_OVER_BYTES`] stay in memory, and
//! the file is created only when the output grows past that (or at the end, when the output is
//! big enough to need a file). Most commands print little, and then never touch the disk.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use tokio::io::{AsyncWriteExt, BufWriter};

/// Characters kept from the start of the output.
pub(crate) const HEAD_CHARS: usize = 30_000;
/// Characters kept from the end of the output.
pub(crate) const TAIL_CHARS: usize = 30_000;
/// A lazy capture keeps output in memory up to this many bytes before it opens its file. Small
/// enough that what it holds always fits the head and tail windows whole.
pub(crate) const SPILL_OVER_BYTES: usize = 32 * 1024;
/// At most this much new output goes into one progress event.
const PROGRESS_MAX_CHARS: usize = 16_000;

/// Running totals of a capture, shared with readers of a background task.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    /// Bytes written to the spill file.
    pub bytes: AtomicU64,
    /// Characters (invalid UTF-8 sequences count as one each).
    pub chars: AtomicU64,
    /// Newline bytes seen.
    pub newlines: AtomicU64,
    /// Whether the last byte seen was not a newline (an unterminated last line).
    pub open_line: AtomicU64,
}

impl Counters {
    /// Lines as an editor counts them: newlines, plus an unterminated last line.
    pub(crate) fn lines(&self) -> u64 {
        self.newlines.load(Ordering::Relaxed) + self.open_line.load(Ordering::Relaxed)
    }
}

/// The capture of one command's output.
#[derive(Debug)]
pub(crate) struct Capture {
    /// The spill file, once open.
    file: Option<BufWriter<tokio::fs::File>>,
    path: Option<PathBuf>,
    /// Where and under what name a lazy capture will open its file.
    dir: PathBuf,
    prefix: String,
    /// A lazy capture's bytes before its file exists.
    early: Vec<u8>,
    /// At the end, a lazy capture without a file opens one only past this many characters.
    keep_over_chars: u64,
    head: String,
    head_chars: usize,
    /// Text after the head, trimmed from the front to (about) [`TAIL_CHARS`].
    tail: String,
    tail_chars: usize,
    /// Characters dropped between head and tail.
    dropped: u64,
    /// Bytes of an incomplete UTF-8 sequence at the end of the last chunk.
    pending: Vec<u8>,
    progress: String,
    progress_chars: usize,
    progress_skipped: u64,
    counters: Arc<Counters>,
    write_error: Option<std::io::Error>,
    /// Bytes buffered but not yet flushed to the file.
    dirty: bool,
}

/// What a finished capture hands back.
#[derive(Debug)]
pub(crate) struct Captured {
    /// Head + marker + tail, or the whole output when it fit.
    pub text: String,
    /// Whether `text` leaves out part of the output.
    pub truncated: bool,
    /// The spill file with every byte (None: a lazy capture that never needed one).
    pub path: Option<PathBuf>,
    /// Total characters.
    pub chars: u64,
    /// Total lines.
    pub lines: u64,
    /// Total bytes (the spill file's size, when it was written completely).
    pub bytes: u64,
    /// Set when the spill file could not be written completely.
    pub write_error: Option<String>,
}

impl Capture {
    /// Starts a capture spilling to a fresh file `<dir>/<prefix>-….log` at once (background
    /// tasks: readers follow the file while the command runs).
    pub(crate) async fn create(dir: &Path, prefix: &str) -> std::io::Result<Self> {
        let mut capture = Self::new(dir, prefix, 0);
        capture.open_file().await?;
        Ok(capture)
    }

    /// Starts a lazy capture: it opens its file only when the output passes
    /// [`SPILL_OVER_BYTES`], or at the end when it has more than `keep_over_chars` characters.
    pub(crate) fn lazy(dir: &Path, prefix: &str, keep_over_chars: u64) -> Self {
        Self::new(dir, prefix, keep_over_chars)
    }

    fn new(dir: &Path, prefix: &str, keep_over_chars: u64) -> Self {
        let prefix = crate::paths::file_safe(prefix);
        Self {
            file: None,
            path: None,
            dir: dir.to_path_buf(),
            prefix,
            early: Vec::new(),
            keep_over_chars,
            head: String::new(),
            head_chars: 0,
            tail: String::new(),
            tail_chars: 0,
            dropped: 0,
            pending: Vec::new(),
            progress: String::new(),
            progress_chars: 0,
            progress_skipped: 0,
            counters: Arc::new(Counters::default()),
            write_error: None,
            dirty: false,
        }
    }

    /// Creates the spill file and moves what was held in memory into it (on the blocking pool:
    /// the pipeline's thread never waits on a file).
    async fn open_file(&mut self) -> std::io::Result<()> {
        let dir = self.dir.clone();
        let prefix = self.prefix.clone();
        let early = std::mem::take(&mut self.early);
        let opened = tokio::task::spawn_blocking(move || {
            let (mut file, path) = crate::paths::create_kept_log(&dir, &prefix)?;
            std::io::Write::write_all(&mut file, &early)?;
            Ok::<_, std::io::Error>((file, path))
        })
        .await
        .map_err(std::io::Error::other)??;
        let (file, path) = opened;
        self.file = Some(BufWriter::with_capacity(
            256 * 1024,
            tokio::fs::File::from_std(file),
        ));
        self.path = Some(path);
        Ok(())
    }

    /// The spill file, once there is one.
    pub(crate) fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// The shared running totals.
    pub(crate) fn counters(&self) -> Arc<Counters> {
        self.counters.clone()
    }

    /// Appends a chunk: to the file whole, to memory within the windows.
    pub(crate) async fn push(&mut self, chunk: &[u8]) {
        if self.write_error.is_none() {
            match self.file.as_mut() {
                Some(file) => {
                    if let Err(err) = file.write_all(chunk).await {
                        self.write_error = Some(err);
                    }
                    self.dirty = true;
                }
                None => {
                    self.early.extend_from_slice(chunk);
                    if self.early.len() > SPILL_OVER_BYTES
                        && let Err(err) = self.open_file().await
                    {
                        self.write_error = Some(err);
                    }
                }
            }
        }
        let c = &self.counters;
        c.bytes.fetch_add(chunk.len() as u64, Ordering::Relaxed);
        let newlines = chunk.iter().filter(|b| **b == b'\n').count() as u64;
        c.newlines.fetch_add(newlines, Ordering::Relaxed);
        if let Some(last) = chunk.last() {
            c.open_line
                .store(u64::from(*last != b'\n'), Ordering::Relaxed);
        }
        let mut bytes = std::mem::take(&mut self.pending);
        bytes.extend_from_slice(chunk);
        let text = decode_prefix(&bytes, &mut self.pending);
        self.push_text(&text);
    }

    fn push_text(&mut self, text: &str) {
        let n = text.chars().count();
        self.counters.chars.fetch_add(n as u64, Ordering::Relaxed);
        let mut rest = text;
        let mut to_head = 0;
        if self.head_chars < HEAD_CHARS {
            let room = HEAD_CHARS - self.head_chars;
            let cut = byte_index_of_char(rest, room);
            self.head.push_str(&rest[..cut]);
            to_head = n.min(room);
            self.head_chars += to_head;
            rest = &rest[cut..];
        }
        if !rest.is_empty() {
            self.tail.push_str(rest);
            self.tail_chars += n - to_head;
            // Trim only when twice the window is held, so trimming is amortised O(1) per char.
            if self.tail_chars > 2 * TAIL_CHARS {
                self.dropped += trim_front(&mut self.tail, &mut self.tail_chars, TAIL_CHARS);
            }
        }
        self.progress.push_str(text);
        self.progress_chars += n;
        if self.progress_chars > 2 * PROGRESS_MAX_CHARS {
            self.progress_skipped += trim_front(
                &mut self.progress,
                &mut self.progress_chars,
                PROGRESS_MAX_CHARS,
            );
        }
    }

    /// Flushes buffered output to the file, so readers of a running task's file see it.
    pub(crate) async fn flush(&mut self) {
        if self.dirty
            && self.write_error.is_none()
            && let Some(file) = self.file.as_mut()
        {
            if let Err(err) = file.flush().await {
                self.write_error = Some(err);
            }
            self.dirty = false;
        }
    }

    /// Whether output has come that is not yet flushed to the file or taken as progress.
    pub(crate) fn has_unsent(&self) -> bool {
        self.dirty || !self.progress.is_empty()
    }

    /// Bytes of new output waiting for [`Capture::take_progress`].
    pub(crate) fn progress_len(&self) -> usize {
        self.progress.len()
    }

    /// New output since the last call (bounded; a marker says how much was skipped), or `None`.
    pub(crate) fn take_progress(&mut self) -> Option<String> {
        if self.progress.is_empty() {
            return None;
        }
        let text = std::mem::take(&mut self.progress);
        self.progress_chars = 0;
        let skipped = std::mem::take(&mut self.progress_skipped);
        Some(if skipped > 0 {
            format!("[… {skipped} characters not streamed; all are in the output file …]\n{text}")
        } else {
            text
        })
    }

    /// Flushes the file and returns the windows.
    pub(crate) async fn finish(mut self) -> Captured {
        if !self.pending.is_empty() {
            let rest = String::from_utf8_lossy(&std::mem::take(&mut self.pending)).into_owned();
            self.push_text(&rest);
        }
        if self.file.is_none()
            && self.write_error.is_none()
            && self.counters.chars.load(Ordering::Relaxed) > self.keep_over_chars
            && let Err(err) = self.open_file().await
        {
            self.write_error = Some(err);
        }
        if self.write_error.is_none()
            && let Some(file) = self.file.as_mut()
            && let Err(err) = file.flush().await
        {
            self.write_error = Some(err);
        }
        if self.tail_chars > TAIL_CHARS {
            self.dropped += trim_front(&mut self.tail, &mut self.tail_chars, TAIL_CHARS);
        }
        let tail = std::mem::take(&mut self.tail);
        let truncated = self.dropped > 0;
        let text = if truncated {
            // Only a file written whole has what the window leaves out.
            let whereabouts = match &self.write_error {
                None => "the output file has all of it".to_string(),
                Some(err) => format!("they are lost: the output file could not be written ({err})"),
            };
            format!(
                "{}\n\n[… {} characters omitted here; {whereabouts} …]\n\n{}",
                self.head, self.dropped, tail
            )
        } else {
            let mut all = self.head;
            all.push_str(&tail);
            all
        };
        Captured {
            text,
            truncated,
            path: self.path,
            chars: self.counters.chars.load(Ordering::Relaxed),
            lines: self.counters.lines(),
            bytes: self.counters.bytes.load(Ordering::Relaxed),
            write_error: self.write_error.map(|e| e.to_string()),
        }
    }
}

/// The byte index of the `n`th character of `s` (its length when it has fewer).
fn byte_index_of_char(s: &str, n: usize) -> usize {
    s.char_indices().nth(n).map(|(i, _)| i).unwrap_or(s.len())
}

/// Drops characters from the front of `s` until `keep` remain; returns how many were dropped.
fn trim_front(s: &mut String, chars: &mut usize, keep: usize) -> u64 {
    if *chars <= keep {
        return 0;
    }
    let drop = *chars - keep;
    let cut = byte_index_of_char(s, drop);
    s.drain(..cut);
    *chars = keep;
    drop as u64
}

/// Decodes `bytes` as UTF-8, replacing invalid sequences with U+FFFD; an incomplete sequence at
/// the very end is left in `rest` for the next chunk.
pub(crate) fn decode_prefix(bytes: &[u8], rest: &mut Vec<u8>) -> String {
    let mut out = String::with_capacity(bytes.len());
    let mut input = bytes;
    loop {
        match std::str::from_utf8(input) {
            Ok(s) => {
                out.push_str(s);
                break;
            }
            Err(err) => {
                let (valid, after) = input.split_at(err.valid_up_to());
                // Safe by construction: `valid_up_to` bytes are valid UTF-8.
                out.push_str(std::str::from_utf8(valid).unwrap_or_default());
                match err.error_len() {
                    Some(n) => {
                        out.push('\u{FFFD}');
                        input = &after[n..];
                    }
                    None => {
                        rest.extend_from_slice(after);
                        break;
                    }
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decode_keeps_incomplete_tail() {
        let mut rest = Vec::new();
        let e = "é".as_bytes();
        assert_eq!(decode_prefix(&[b'a', e[0]], &mut rest), "a");
        assert_eq!(rest, vec![e[0]]);
        let mut bytes = std::mem::take(&mut rest);
        bytes.push(e[1]);
        assert_eq!(decode_prefix(&bytes, &mut rest), "é");
        assert!(rest.is_empty());
        assert_eq!(decode_prefix(&[0xff, b'x'], &mut rest), "\u{FFFD}x");
    }

    #[tokio::test]
    async fn windows_and_file() {
        let dir = tempfile::tempdir().unwrap();
        let mut cap = Capture::create(dir.path(), "t").await.unwrap();
        let line = "0123456789\n".repeat(1000);
        for _ in 0..10 {
            cap.push(line.as_bytes()).await;
        }
        let out = cap.finish().await;
        assert!(out.truncated);
        assert_eq!(out.chars, 110_000);
        assert_eq!(out.lines, 10_000);
        assert!(out.text.starts_with("0123456789\n"));
        assert!(out.text.ends_with("0123456789\n"));
        assert_eq!(std::fs::read(out.path.unwrap()).unwrap().len(), 110_000);

        let mut small = Capture::create(dir.path(), "s").await.unwrap();
        small.push(b"hi").await;
        let out = small.finish().await;
        assert_eq!(
            (out.text.as_str(), out.truncated, out.lines),
            ("hi", false, 1)
        );
    }

    #[tokio::test]
    async fn lazy_capture_opens_its_file_only_when_needed() {
        let dir = tempfile::tempdir().unwrap();
        // Small: never a file.
        let mut small = Capture::lazy(dir.path(), "small", 100);
        small.push(b"hello\n").await;
        let out = small.finish().await;
        assert!(out.path.is_none());
        assert_eq!(out.text, "hello\n");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
        // Over the keep threshold at the end: a file with every byte.
        let mut mid = Capture::lazy(dir.path(), "mid", 100);
        let text = "x".repeat(500);
        mid.push(text.as_bytes()).await;
        let out = mid.finish().await;
        assert_eq!(std::fs::read_to_string(out.path.unwrap()).unwrap(), text);
        // Past the spill threshold while running: the file holds the early bytes too.
        let mut big = Capture::lazy(dir.path(), "big", 100);
        let chunk = "0123456789abcdef".repeat(1024);
        for _ in 0..8 {
            big.push(chunk.as_bytes()).await;
        }
        assert!(big.path().is_some());
        let out = big.finish().await;
        assert_eq!(
            std::fs::read_to_string(out.path.unwrap()).unwrap(),
            chunk.repeat(8)
        );
    }

    #[tokio::test]
    async fn a_window_does_not_promise_a_file_that_could_not_be_written() {
        let dir = tempfile::tempdir().unwrap();
        // The output folder is a file: the spill file cannot be made.
        let not_a_dir = dir.path().join("od");
        std::fs::write(&not_a_dir, "").unwrap();
        let mut cap = Capture::lazy(&not_a_dir, "big", 100);
        let line = "0123456789\n".repeat(1000);
        for _ in 0..20 {
            cap.push(line.as_bytes()).await;
        }
        let out = cap.finish().await;
        assert!(out.truncated && out.path.is_none() && out.write_error.is_some());
        assert!(
            !out.text.contains("the output file has all of it"),
            "{}",
            &out.text[..200]
        );
        assert!(out.text.contains("they are lost"));
    }
}
