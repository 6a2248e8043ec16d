//! `Grep`: regex search of file contents with ripgrep's library crates.
//!
//! Files are walked with `ignore`: `.gitignore` applies inside a git repository (as in
//! ripgrep: a `.git` folder must exist at or above the ignore file), `.ignore` files always,
//! hidden files are searched, `.git` folders never. Binary files (a NUL byte) are skipped whole,
//! and so are files a Read deny rule covers.

use super::limits;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use async_trait::async_trait;
use grep_regex::RegexMatcherBuilder;
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder, Sink, SinkContext, SinkMatch};
use serde_json::{Value, json};

use super::{absolutize_field, bool_field, str_field, u64_field};
use crate::call::Input;
use crate::session::Session;
use crate::tool::{Access, StateKey, Tool, ToolContext, ToolOutput, Verdict};

/// Without `head_limit`, at most this many output lines are collected (the output budget then
/// shapes what the model sees).
const MAX_ENTRIES: usize = 20_000;
/// Context lines asked for are capped here (the searcher buffers them).
const MAX_CONTEXT: usize = 1_000;
/// Matched lines are cut to this many characters (minified files have enormous lines).
const MAX_LINE_CHARS: usize = 2_000;

/// The `Grep` tool.
#[derive(Debug, Default)]
pub(crate) struct Grep;

/// What to return.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// Paths of files with a match, newest first.
    FilesWithMatches,
    /// Matching lines (with context).
    Content,
    /// Matching lines per file.
    Count,
}

/// A parsed Grep request.
#[derive(Debug, Clone)]
pub(crate) struct Request {
    /// The regular expression.
    pub pattern: String,
    /// File or folder to search.
    pub path: PathBuf,
    /// Only files matching this glob (several, separated by whitespace or commas: [`glob_patterns`]).
    pub glob: Option<String>,
    /// Only files of this ripgrep type (`rust`, `py`, …).
    pub file_type: Option<String>,
    /// What to return.
    pub mode: Mode,
    /// Case-insensitive.
    pub case_insensitive: bool,
    /// Line numbers in content mode.
    pub line_numbers: bool,
    /// Context lines before and after.
    pub before: usize,
    /// Context lines after.
    pub after: usize,
    /// Patterns may span lines; `.` matches newlines.
    pub multiline: bool,
    /// Return at most this many entries.
    pub head_limit: Option<usize>,
    /// Skip this many entries before `head_limit` applies (paging through a long result).
    pub offset: usize,
    /// When set, the search also says what hooks are told ([`Searched::response`]), naming
    /// files relative to this folder (the working directory).
    pub describe_from: Option<PathBuf>,
}

/// A finished search.
#[derive(Debug)]
pub(crate) struct Searched {
    /// The tool's output for the model.
    pub text: String,
    /// The shape of the reference CLI's `GrepOutput`, when [`Request::describe_from`] is set.
    pub response: Option<Value>,
}

impl Request {
    fn from_input(input: &Input, session: &Session) -> Self {
        let lines = |key: &str| u64_field(input, key).map(|v| (v as usize).min(MAX_CONTEXT));
        // `context` is the reference's other name for `-C`.
        let context = lines("-C").or_else(|| lines("context")).unwrap_or(0);
        let mode = match str_field(input, "output_mode") {
            Some("content") => Mode::Content,
            Some("count") => Mode::Count,
            _ => Mode::FilesWithMatches,
        };
        Request {
            pattern: str_field(input, "pattern").unwrap_or_default().to_string(),
            path: str_field(input, "path")
                .map(|p| crate::paths::absolutize(p, &session.cwd, &session.home))
                .unwrap_or_else(|| session.cwd.clone()),
            glob: str_field(input, "glob").map(str::to_string),
            file_type: str_field(input, "type").map(str::to_string),
            mode,
            case_insensitive: bool_field(input, "-i", false),
            line_numbers: bool_field(input, "-n", true),
            before: u64_field(input, "-B")
                .map(|v| v as usize)
                .unwrap_or(context),
            after: u64_field(input, "-A")
                .map(|v| v as usize)
                .unwrap_or(context),
            multiline: bool_field(input, "multiline", false),
            head_limit: u64_field(input, "head_limit")
                .map(|v| v as usize)
                .filter(|v| *v > 0),
            offset: u64_field(input, "offset").map_or(0, |v| (v as usize).min(MAX_ENTRIES)),
            describe_from: None,
        }
    }
}

#[async_trait]
impl Tool for Grep {
    fn access(&self) -> Access<'_> {
        Access::search("path")
    }

    fn name(&self) -> &str {
        "Grep"
    }

    fn description(&self) -> &str {
        "Searches file contents with a regular expression (ripgrep syntax). `output_mode`: \
         `files_with_matches` (default; paths, newest first), `content` (matching lines, with \
         `-n` line numbers by default and `-A`/`-B`/`-C` context), or `count`. Filter files with \
         `glob` (e.g. `*.{ts,tsx}`) or `type` (e.g. `rust`, `py`). `-i` ignores case; \
         `multiline` lets a match span lines. `head_limit` keeps the first N entries. Respects \
         .gitignore in git repositories and .ignore files; skips .git and binary files."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "pattern": {"type": "string", "maxLength": limits::PATTERN_CHARS, "description": "Regular expression"},
                "path": {"type": "string", "maxLength": limits::PATH_CHARS, "description": "File or folder to search (default: the working directory)"},
                "glob": {"type": "string", "maxLength": limits::PATTERN_CHARS, "description": "Only files matching this glob; several separated by spaces or commas"},
                "type": {"type": "string", "maxLength": limits::NAME_CHARS, "description": "Only files of this type (rust, py, js, …)"},
                "output_mode": {"type": "string", "enum": ["files_with_matches", "content", "count"]},
                "-i": {"type": "boolean", "description": "Case-insensitive"},
                "-n": {"type": "boolean", "description": "Line numbers (content mode; default true)"},
                "-A": {"type": "integer", "minimum": 0, "description": "Lines of context after each match"},
                "-B": {"type": "integer", "minimum": 0, "description": "Lines of context before each match"},
                "-C": {"type": "integer", "minimum": 0, "description": "Lines of context around each match"},
                "context": {"type": "integer", "minimum": 0, "description": "The same as -C"},
                "multiline": {"type": "boolean", "description": "Let patterns span lines"},
                "head_limit": {"type": "integer", "minimum": 0, "description": "Return only the first N entries"},
                "offset": {"type": "integer", "minimum": 0, "description": "Skip the first N entries (before head_limit)"}
            },
            "required": ["pattern"],
            "additionalProperties": false
        })
    }

    fn is_concurrency_safe(&self, _input: &Input) -> bool {
        true
    }

    fn normalize(&self, input: &mut Input, session: &Session) {
        absolutize_field(input, "path", session);
    }

    fn validate(&self, input: &Input, _session: &Session, _state: StateKey) -> Verdict {
        let pattern = str_field(input, "pattern").unwrap_or_default();
        let verdict = RegexMatcherBuilder::new()
            .build(pattern)
            .map(|_| ())
            .map_err(|e| format!("invalid regular expression {pattern:?}: {e}"))
            .and_then(|()| match str_field(input, "type") {
                Some(t) => file_types(t).map(|_| ()),
                None => Ok(()),
            });
        Verdict::Now(verdict)
    }

    async fn call(&self, input: Input, ctx: ToolContext) -> ToolOutput {
        let session = ctx.session.clone();
        let mut request = Request::from_input(&input, &session);
        if ctx.hook_response {
            request.describe_from = Some(session.cwd.clone());
        }
        let cancel = ctx.cancel.clone();
        let job = tokio::task::spawn_blocking(move || {
            search(&request, &|p| session.guard.read_denied(p), &|| {
                cancel.is_cancelled()
            })
        });
        match job.await {
            Ok(Ok(found)) => ToolOutput::success(found.text).with_response(found.response),
            Ok(Err(e)) if e == "cancelled" => ToolOutput::cancelled(e),
            Ok(Err(e)) => ToolOutput::failed(e),
            Err(e) => ToolOutput::failed(format!("the search failed: {e}")),
        }
    }
}

fn file_types(name: &str) -> Result<ignore::types::Types, String> {
    let mut builder = ignore::types::TypesBuilder::new();
    builder.add_defaults();
    let known = builder.definitions().iter().any(|d| d.name() == name);
    if !known {
        return Err(format!(
            "unknown file type {name:?}; use a ripgrep type name such as rust, py, js, ts, go, \
             java, c, cpp, md, json, or use glob instead"
        ));
    }
    builder.select(name);
    builder.build().map_err(|e| e.to_string())
}

/// One file's findings.
#[derive(Debug, Default)]
struct FileHits {
    lines: Vec<String>,
    count: usize,
    binary: bool,
}

struct Collect<'a> {
    path: &'a str,
    numbers: bool,
    want_lines: bool,
    hits: FileHits,
}

fn cut(line: &str) -> String {
    let line = line.trim_end_matches(['\n', '\r']);
    match line.char_indices().nth(MAX_LINE_CHARS) {
        Some((i, _)) => format!("{}… [line cut]", &line[..i]),
        None => line.to_string(),
    }
}

impl Collect<'_> {
    fn push(&mut self, sep: char, number: Option<u64>, bytes: &[u8]) {
        let text = String::from_utf8_lossy(bytes);
        for (i, line) in text.split_inclusive('\n').enumerate() {
            let line = cut(line);
            self.hits.lines.push(match (self.numbers, number) {
                (true, Some(n)) => format!("{}{sep}{}{sep}{line}", self.path, n + i as u64),
                _ => format!("{}{sep}{line}", self.path),
            });
        }
    }
}

impl Sink for Collect<'_> {
    type Error = std::io::Error;

    fn matched(&mut self, _s: &Searcher, mat: &SinkMatch<'_>) -> Result<bool, Self::Error> {
        self.hits.count += 1;
        if self.want_lines {
            self.push(':', mat.line_number(), mat.bytes());
        }
        Ok(self.hits.lines.len() < MAX_ENTRIES)
    }

    fn context(&mut self, _s: &Searcher, ctx: &SinkContext<'_>) -> Result<bool, Self::Error> {
        if self.want_lines {
            self.push('-', ctx.line_number(), ctx.bytes());
        }
        Ok(true)
    }

    fn context_break(&mut self, _s: &Searcher) -> Result<bool, Self::Error> {
        if self.want_lines {
            self.hits.lines.push("--".to_string());
        }
        Ok(true)
    }

    fn binary_data(&mut self, _s: &Searcher, _offset: u64) -> Result<bool, Self::Error> {
        // A binary file is skipped whole, including matches found before its first NUL byte.
        self.hits.binary = true;
        Ok(false)
    }
}

/// Runs a search; the error text is for the model ("cancelled" when cancelled).
pub(crate) fn search(
    req: &Request,
    denied: &dyn Fn(&Path) -> bool,
    cancelled: &dyn Fn() -> bool,
) -> Result<Searched, String> {
    if !req.path.exists() {
        return Err(format!(
            "{} does not exist; give an existing file or folder as path",
            req.path.display()
        ));
    }
    let matcher = RegexMatcherBuilder::new()
        .case_insensitive(req.case_insensitive)
        .multi_line(true)
        .dot_matches_new_line(req.multiline)
        .line_terminator(if req.multiline { None } else { Some(b'\n') })
        .build(&req.pattern)
        .map_err(|e| format!("invalid regular expression {:?}: {e}", req.pattern))?;
    let content = req.mode == Mode::Content;
    let mut searcher = SearcherBuilder::new()
        .binary_detection(BinaryDetection::quit(b'\x00'))
        .line_number(true)
        .multi_line(req.multiline)
        .before_context(if content { req.before } else { 0 })
        .after_context(if content { req.after } else { 0 })
        .build();
    let mut walk = ignore::WalkBuilder::new(&req.path);
    walk.hidden(false)
        .git_global(false)
        .sort_by_file_name(|a, b| a.cmp(b))
        .filter_entry(|e| e.file_name() != ".git");
    if let Some(glob) = &req.glob {
        let mut ob = ignore::overrides::OverrideBuilder::new(&req.path);
        for g in glob_patterns(glob) {
            ob.add(g).map_err(|e| format!("invalid glob {g:?}: {e}"))?;
        }
        walk.overrides(
            ob.build()
                .map_err(|e| format!("invalid glob {glob:?}: {e}"))?,
        );
    }
    if let Some(t) = &req.file_type {
        walk.types(file_types(t)?);
    }
    let limit = req.head_limit.unwrap_or(MAX_ENTRIES).min(MAX_ENTRIES);
    let mut files: Vec<(SystemTime, String, FileHits)> = Vec::new();
    let mut entries = 0usize;
    let mut stopped = false;
    for (n, entry) in walk.build().enumerate() {
        if n % 64 == 0 && cancelled() {
            return Err("cancelled".to_string());
        }
        let Ok(entry) = entry else { continue };
        if !entry.file_type().is_some_and(|t| t.is_file()) || denied(entry.path()) {
            continue;
        }
        let path = entry.path().display().to_string();
        let mut sink = Collect {
            path: &path,
            numbers: req.line_numbers,
            want_lines: content,
            hits: FileHits::default(),
        };
        if searcher
            .search_path(&matcher, entry.path(), &mut sink)
            .is_err()
        {
            continue;
        }
        let hits = sink.hits;
        if hits.binary || hits.count == 0 {
            continue;
        }
        entries += if content { hits.lines.len() } else { 1 };
        let mtime = entry
            .metadata()
            .ok()
            .and_then(|m| m.modified().ok())
            .unwrap_or(SystemTime::UNIX_EPOCH);
        files.push((mtime, path, hits));
        // files_with_matches sorts by time afterwards, so it must see every file.
        if entries >= req.offset + limit && req.mode != Mode::FilesWithMatches {
            stopped = true;
            break;
        }
    }
    Ok(format_output(req, files, limit, stopped))
}

/// What hooks are told of a search, counted as the text counts it.
#[derive(Debug, Default)]
struct Summary {
    /// Files with a match, in the order shown (all of them, for content and count).
    files: Vec<String>,
    /// Files with a match in all.
    total_files: usize,
    /// The entries shown (content and count modes).
    content: Option<String>,
    /// Lines of `content` (content mode).
    lines: Option<(usize, usize)>,
    /// Matching lines in all (count mode).
    matches: Option<usize>,
    /// The limit that cut the entries, if one did.
    applied_limit: Option<usize>,
}

impl Summary {
    /// The shape of the reference CLI's `GrepOutput`.
    fn response(self, mode: Mode, cwd: &Path) -> Value {
        let filenames: Vec<String> = self
            .files
            .iter()
            .map(|f| super::hook_path(Path::new(f), cwd))
            .collect();
        let mut out = json!({
            "mode": match mode {
                Mode::FilesWithMatches => "files_with_matches",
                Mode::Content => "content",
                Mode::Count => "count",
            },
            "numFiles": filenames.len(),
            "filenames": filenames,
        });
        if mode == Mode::FilesWithMatches {
            out["totalFiles"] = Value::from(self.total_files);
        }
        if let Some(content) = self.content {
            out["content"] = Value::from(content);
        }
        if let Some((shown, total)) = self.lines {
            out["numLines"] = Value::from(shown);
            out["totalLines"] = Value::from(total);
        }
        if let Some(matches) = self.matches {
            out["numMatches"] = Value::from(matches);
        }
        if let Some(limit) = self.applied_limit {
            out["appliedLimit"] = Value::from(limit);
        }
        out
    }
}

fn format_output(
    req: &Request,
    files: Vec<(SystemTime, String, FileHits)>,
    limit: usize,
    stopped: bool,
) -> Searched {
    let describe = req.describe_from.is_some();
    let (text, summary) = format_text(req, files, limit, stopped, describe);
    Searched {
        text,
        response: req
            .describe_from
            .as_deref()
            .map(|cwd| summary.response(req.mode, cwd)),
    }
}

/// The text, and (when `describe`) the summary for hooks.
fn format_text(
    req: &Request,
    mut files: Vec<(SystemTime, String, FileHits)>,
    limit: usize,
    stopped: bool,
    describe: bool,
) -> (String, Summary) {
    let mut summary = Summary::default();
    if files.is_empty() {
        if req.mode == Mode::Content {
            summary.lines = Some((0, 0));
            summary.content = Some(String::new());
        } else if req.mode == Mode::Count {
            summary.matches = Some(0);
            summary.content = Some(String::new());
        }
        return ("No matches found".to_string(), summary);
    }
    let cut = |shown: usize| stopped || req.head_limit.is_some_and(|h| shown >= h);
    let more = |shown: usize| {
        if cut(shown) {
            format!(
                "\n(Output limited to {}{shown} entries{}; there may be more. Narrow the search, raise head_limit or page on with offset.)",
                if req.offset == 0 { "the first " } else { "" },
                skipped(req.offset)
            )
        } else {
            String::new()
        }
    };
    summary.total_files = files.len();
    match req.mode {
        Mode::FilesWithMatches => {
            files.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
            let total = files.len();
            let shown: Vec<&str> = (files.iter().skip(req.offset).take(limit))
                .map(|f| f.1.as_str())
                .collect();
            let mut out = format!(
                "Found {total} file{}\n{}",
                if total == 1 { "" } else { "s" },
                shown.join("\n")
            );
            if shown.len() < total {
                out.push_str(&format!(
                    "\n(Showing {} of {total} files, newest first{}.)",
                    shown.len(),
                    skipped(req.offset)
                ));
                summary.applied_limit = Some(limit);
            }
            if describe {
                summary.files = shown.iter().map(|f| f.to_string()).collect();
            }
            (out, summary)
        }
        Mode::Count => {
            let shown: Vec<String> = files
                .iter()
                .skip(req.offset)
                .take(limit)
                .map(|f| format!("{}:{}", f.1, f.2.count))
                .collect();
            let total: usize = files.iter().map(|f| f.2.count).sum();
            let out = format!(
                "{}\n\nFound {total} matching line{} in {} file{}{}",
                shown.join("\n"),
                if total == 1 { "" } else { "s" },
                files.len(),
                if files.len() == 1 { "" } else { "s" },
                more(shown.len())
            );
            if describe {
                summary.files = files.iter().map(|f| f.1.clone()).collect();
                summary.content = Some(shown.join("\n"));
                summary.matches = Some(total);
                summary.applied_limit = cut(shown.len()).then_some(limit.min(shown.len()));
            }
            (out, summary)
        }
        Mode::Content => {
            let mut lines: Vec<String> = Vec::new();
            let mut prev_file = false;
            for (_, path, hits) in files {
                // Context groups of different files are separated like ripgrep's.
                if prev_file && (req.before > 0 || req.after > 0) {
                    lines.push("--".to_string());
                }
                lines.extend(hits.lines);
                prev_file = true;
                if describe {
                    summary.files.push(path);
                }
            }
            let total = lines.len();
            lines.drain(..req.offset.min(total));
            lines.truncate(limit);
            let n = lines.len();
            let content = lines.join("\n");
            let out = format!("{content}{}", more(n));
            if describe {
                summary.lines = Some((n, total));
                summary.applied_limit = cut(n).then_some(n);
                summary.content = Some(content);
            }
            (out, summary)
        }
    }
}

/// How a note about a cut result says where it started: nothing from the first entry.
fn skipped(offset: usize) -> String {
    if offset == 0 {
        String::new()
    } else {
        format!(", after the first {offset} skipped")
    }
}

/// The globs of Grep's `glob`, as the reference splits it: at whitespace, then each word at
/// commas unless it holds a `{…}` alternative (`*.{ts,tsx}` stays one glob); empty ones dropped.
fn glob_patterns(glob: &str) -> Vec<&str> {
    glob.split_whitespace()
        .flat_map(|word| {
            if word.contains('{') && word.contains('}') {
                vec![word]
            } else {
                word.split(',').filter(|g| !g.is_empty()).collect()
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {

    #[test]
    fn glob_lists_split_at_whitespace_and_commas_but_not_inside_braces() {
        assert_eq!(glob_patterns("*.txt,*.py"), ["*.txt", "*.py"]);
        assert_eq!(glob_patterns(" *.rs  src/*.md,, "), ["*.rs", "src/*.md"]);
        assert_eq!(glob_patterns("*.{ts,tsx} *.js"), ["*.{ts,tsx}", "*.js"]);
        assert!(glob_patterns(" , ").is_empty());
    }
    use super::*;

    fn req(root: &Path, pattern: &str, mode: Mode) -> Request {
        Request {
            pattern: pattern.to_string(),
            path: root.to_path_buf(),
            glob: None,
            file_type: None,
            mode,
            case_insensitive: false,
            line_numbers: true,
            before: 0,
            after: 0,
            multiline: false,
            head_limit: None,
            offset: 0,
            describe_from: None,
        }
    }

    #[test]
    fn modes_ignore_and_binary() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir(root.join(".git")).unwrap();
        std::fs::write(root.join(".gitignore"), "ignored.txt\n").unwrap();
        std::fs::write(root.join("a.txt"), "one\nneedle two\nthree\nneedle four\n").unwrap();
        std::fs::write(root.join("ignored.txt"), "needle\n").unwrap();
        std::fs::write(root.join("bin.dat"), b"needle\0\x01").unwrap();
        std::fs::write(root.join(".git/config"), "needle\n").unwrap();
        std::fs::write(root.join("b.rs"), "fn needle() {}\n").unwrap();
        let none = |_: &Path| false;
        let never = || false;

        let out = search(&req(root, "needle", Mode::FilesWithMatches), &none, &never)
            .unwrap()
            .text;
        assert!(out.starts_with("Found 2 files"), "{out}");
        assert!(!out.contains("ignored") && !out.contains("bin.dat") && !out.contains(".git/"));

        let out = search(&req(root, "needle", Mode::Count), &none, &never)
            .unwrap()
            .text;
        assert!(out.contains("a.txt:2") && out.contains("b.rs:1"), "{out}");

        let mut r = req(root, "NEEDLE t", Mode::Content);
        r.case_insensitive = true;
        r.after = 1;
        let out = search(&r, &none, &never).unwrap().text;
        let a = root.join("a.txt").display().to_string();
        assert_eq!(out, format!("{a}:2:needle two\n{a}-3-three"));

        let mut r = req(root, "needle", Mode::Content);
        r.file_type = Some("rust".into());
        r.line_numbers = false;
        let out = search(&r, &none, &never).unwrap().text;
        assert_eq!(
            out,
            format!("{}:fn needle() {{}}", root.join("b.rs").display())
        );

        let mut r = req(root, "two\nthree", Mode::Content);
        r.multiline = true;
        let out = search(&r, &none, &never).unwrap().text;
        assert!(
            out.contains(":2:needle two") && out.contains(":3:three"),
            "{out}"
        );

        let denied = |p: &Path| p.ends_with("a.txt");
        let out = search(
            &req(root, "needle", Mode::FilesWithMatches),
            &denied,
            &never,
        )
        .unwrap()
        .text;
        assert!(out.starts_with("Found 1 file\n"), "{out}");

        let mut r = req(root, "needle", Mode::Content);
        r.head_limit = Some(1);
        let out = search(&r, &none, &never).unwrap().text;
        assert!(out.contains("limited to the first 1"), "{out}");
        assert_eq!(
            search(&req(root, "zzz", Mode::Content), &none, &never)
                .unwrap()
                .text,
            "No matches found"
        );
    }

    #[test]
    fn hooks_are_told_what_the_text_says() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::write(root.join("a.txt"), "one\ntwo\n").unwrap();
        std::fs::create_dir(root.join("src")).unwrap();
        std::fs::write(root.join("src/b.rs"), "two two\nx\ntwo\n").unwrap();
        let none = |_: &Path| false;
        let never = || false;
        let described = |mode: Mode, limit: Option<usize>| {
            let mut r = req(root, "two", mode);
            r.head_limit = limit;
            r.describe_from = Some(root.to_path_buf());
            search(&r, &none, &never).unwrap().response.unwrap()
        };

        let files = described(Mode::FilesWithMatches, None);
        assert_eq!(files["mode"], "files_with_matches");
        assert_eq!(files["numFiles"], 2);
        assert_eq!(files["totalFiles"], 2);
        let mut names: Vec<&str> = files["filenames"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f.as_str().unwrap())
            .collect();
        names.sort();
        assert_eq!(names, ["a.txt", "src/b.rs"], "relative to the folder given");
        let cut = described(Mode::FilesWithMatches, Some(1));
        assert_eq!(
            (cut["numFiles"].as_u64(), cut["totalFiles"].as_u64()),
            (Some(1), Some(2))
        );
        assert_eq!(cut["appliedLimit"], 1);

        let content = described(Mode::Content, None);
        assert_eq!(content["numLines"], 3);
        assert_eq!(content["content"].as_str().unwrap().lines().count(), 3);
        assert!(content.get("appliedLimit").is_none());
        let cut = described(Mode::Content, Some(2));
        assert_eq!(cut["numLines"], 2);
        assert_eq!(cut["appliedLimit"], 2);

        let count = described(Mode::Count, None);
        assert_eq!(count["numMatches"], 3, "matching lines in all");
        assert_eq!(count["numFiles"], 2);

        let mut r = req(root, "zzz", Mode::FilesWithMatches);
        r.describe_from = Some(root.to_path_buf());
        let nothing = search(&r, &none, &never).unwrap().response.unwrap();
        assert_eq!(nothing["numFiles"], 0);
        assert_eq!(nothing["filenames"], json!([]));
    }
}
