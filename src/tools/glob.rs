//! `Glob`: files whose path matches a glob pattern, newest first. No ignore files apply.

use super::limits;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use async_trait::async_trait;
use globset::GlobBuilder;
use serde_json::{Value, json};

use super::{absolutize_field, str_field};
use crate::call::Input;
use crate::session::Session;
use crate::tool::{Access, Tool, ToolContext, ToolOutput};

/// At most this many paths are returned.
pub(crate) const MAX_RESULTS: usize = 100;

/// The `Glob` tool.
#[derive(Debug, Default)]
pub(crate) struct Glob;

#[async_trait]
impl Tool for Glob {
    fn access(&self) -> Access<'_> {
        Access::search("path")
    }

    fn name(&self) -> &str {
        "Glob"
    }

    fn description(&self) -> &str {
        "Finds files by path pattern, e.g. `**/*.rs` or `src/**/*.{ts,tsx}`. `*` matches within \
         one path segment, `**` any number of folders. The pattern is matched against paths \
         relative to `path` (default: the working directory). Returns absolute paths, most \
         recently modified first, at most 100. Ignore files (.gitignore) do not apply; `.git` \
         folders are skipped unless the pattern names `.git`."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "pattern": {"type": "string", "maxLength": limits::PATTERN_CHARS, "description": "The glob pattern"},
                "path": {"type": "string", "maxLength": limits::PATH_CHARS, "description": "The folder to search (default: the working directory)"}
            },
            "required": ["pattern"],
            "additionalProperties": false
        })
    }

    fn is_concurrency_safe(&self, _input: &Input) -> bool {
        true
    }

    fn normalize(&self, input: &mut Input, session: &Session) {
        // An absolute pattern names the folder it searches: it becomes `path`, so hooks and
        // permission rules judge the folder actually searched rather than the default cwd.
        if let Some(pattern) = str_field(input, "pattern")
            && Path::new(pattern).is_absolute()
        {
            let (base, rest) = split_literal_prefix(pattern);
            input.insert(
                "path".into(),
                Value::from(base.to_string_lossy().into_owned()),
            );
            input.insert("pattern".into(), Value::from(rest));
        }
        absolutize_field(input, "path", session);
    }

    async fn call(&self, input: Input, ctx: ToolContext) -> ToolOutput {
        let session = ctx.session.clone();
        let base = match str_field(&input, "path") {
            Some(p) => crate::paths::absolutize(p, &session.cwd, &session.home),
            None => session.cwd.clone(),
        };
        let pattern = str_field(&input, "pattern").unwrap_or_default().to_string();
        let cancel = ctx.cancel.clone();
        let started = std::time::Instant::now();
        let job = tokio::task::spawn_blocking(move || {
            glob_files(&base, &pattern, &|p| session.guard.read_denied(p), &|| {
                cancel.is_cancelled()
            })
        });
        match job.await {
            Ok(Ok(found)) => {
                let response = ctx.hook_response.then(|| {
                    let filenames: Vec<String> = found
                        .paths
                        .iter()
                        .map(|p| super::hook_path(p, ctx.cwd()))
                        .collect();
                    json!({
                        "filenames": filenames,
                        "durationMs": started.elapsed().as_millis() as u64,
                        "numFiles": found.paths.len(),
                        "truncated": found.total > found.paths.len(),
                        "totalMatches": found.total,
                        "countIsComplete": true,
                    })
                });
                ToolOutput::success(format_results(found)).with_response(response)
            }
            Ok(Err(GlobError::Cancelled)) => ToolOutput::cancelled("cancelled"),
            Ok(Err(e)) => ToolOutput::failed(e.to_string()),
            Err(e) => ToolOutput::failed(format!("the search failed: {e}")),
        }
    }
}

/// Why a glob search failed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum GlobError {
    /// The pattern does not parse.
    #[error("invalid glob pattern {pattern:?}: {err}")]
    Pattern {
        /// The pattern as given.
        pattern: String,
        /// The parser's complaint.
        err: String,
    },
    /// The folder to search is missing or not a folder.
    #[error("{0} is not a folder; give an existing folder as path")]
    NotADir(PathBuf),
    /// The call was cancelled.
    #[error("cancelled")]
    Cancelled,
}

/// Matches found, newest first (ties by path), and the total count.
#[derive(Debug)]
pub(crate) struct Found {
    /// Up to [`MAX_RESULTS`] paths.
    pub paths: Vec<PathBuf>,
    /// How many matched in all.
    pub total: usize,
}

/// Splits an absolute pattern into the folder made of its leading literal segments and the rest.
fn split_literal_prefix(pattern: &str) -> (PathBuf, String) {
    let mut base = PathBuf::new();
    let mut rest: Vec<String> = Vec::new();
    let mut literal = true;
    for comp in Path::new(pattern).components() {
        let s = comp.as_os_str().to_string_lossy().into_owned();
        let is_glob = s.contains(['*', '?', '[', '{']);
        if literal && !is_glob {
            base.push(comp.as_os_str());
        } else {
            literal = false;
            rest.push(s);
        }
    }
    if rest.is_empty() {
        // Entirely literal: match that one file name in its folder.
        let name = base
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        base.pop();
        return (base, name);
    }
    (base, rest.join("/"))
}

/// Walks `base` and returns files matching `pattern`, skipping `denied` ones.
pub(crate) fn glob_files(
    base: &Path,
    pattern: &str,
    denied: &dyn Fn(&Path) -> bool,
    cancelled: &dyn Fn() -> bool,
) -> Result<Found, GlobError> {
    let (base, pattern) = if Path::new(pattern).is_absolute() {
        split_literal_prefix(pattern)
    } else {
        (
            base.to_path_buf(),
            pattern.trim_start_matches("./").to_string(),
        )
    };
    if !base.is_dir() {
        return Err(GlobError::NotADir(base));
    }
    let matcher = GlobBuilder::new(&pattern)
        .literal_separator(true)
        .build()
        .map_err(|e| GlobError::Pattern {
            pattern: pattern.clone(),
            err: e.kind().to_string(),
        })?
        .compile_matcher();
    let into_git = pattern.contains(".git");
    let walker = ignore::WalkBuilder::new(&base)
        .standard_filters(false)
        .hidden(false)
        .follow_links(false)
        .filter_entry(move |e| into_git || e.file_name() != ".git")
        .build();
    let mut hits: Vec<(SystemTime, PathBuf)> = Vec::new();
    for (n, entry) in walker.enumerate() {
        if n % 256 == 0 && cancelled() {
            return Err(GlobError::Cancelled);
        }
        let Ok(entry) = entry else { continue };
        if !entry
            .file_type()
            .is_some_and(|t| t.is_file() || t.is_symlink())
        {
            continue;
        }
        let Ok(rel) = entry.path().strip_prefix(&base) else {
            continue;
        };
        if !matcher.is_match(rel) || denied(entry.path()) {
            continue;
        }
        let mtime = entry
            .metadata()
            .ok()
            .and_then(|m| m.modified().ok())
            .unwrap_or(SystemTime::UNIX_EPOCH);
        hits.push((mtime, entry.into_path()));
    }
    sort_newest_first(&mut hits);
    let total = hits.len();
    Ok(Found {
        paths: hits.into_iter().take(MAX_RESULTS).map(|(_, p)| p).collect(),
        total,
    })
}

/// Newest first; equal times by path, so the order is stable.
pub(crate) fn sort_newest_first(hits: &mut [(SystemTime, PathBuf)]) {
    hits.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
}

fn format_results(found: Found) -> String {
    if found.total == 0 {
        return "No files found".to_string();
    }
    let mut out: String = found
        .paths
        .iter()
        .map(|p| format!("{}\n", p.display()))
        .collect();
    if found.total > found.paths.len() {
        out.push_str(&format!(
            "(Showing the {} most recently modified of {} matching files; {} more matched. Use a \
             narrower pattern or path to see them.)\n",
            found.paths.len(),
            found.total,
            found.total - found.paths.len()
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn ordering_ties_by_path() {
        let t0 = SystemTime::UNIX_EPOCH;
        let t1 = t0 + Duration::from_secs(5);
        let mut v = vec![
            (t0, PathBuf::from("b")),
            (t1, PathBuf::from("z")),
            (t0, PathBuf::from("a")),
        ];
        sort_newest_first(&mut v);
        let names: Vec<_> = v.iter().map(|(_, p)| p.to_str().unwrap()).collect();
        assert_eq!(names, ["z", "a", "b"]);
    }

    #[test]
    fn literal_prefix() {
        assert_eq!(
            split_literal_prefix("/a/b/**/*.rs"),
            (PathBuf::from("/a/b"), "**/*.rs".to_string())
        );
        assert_eq!(
            split_literal_prefix("/a/b/c.txt"),
            (PathBuf::from("/a/b"), "c.txt".to_string())
        );
    }

    #[test]
    fn matches_relative_and_skips_git() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        for f in [
            "a.rs",
            "src/b.rs",
            "src/deep/c.rs",
            "x.txt",
            ".git/d.rs",
            ".hidden.rs",
        ] {
            let p = root.join(f);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, "").unwrap();
        }
        let names = |pat: &str| {
            let mut v: Vec<String> = glob_files(root, pat, &|_| false, &|| false)
                .unwrap()
                .paths
                .iter()
                .map(|p| p.strip_prefix(root).unwrap().display().to_string())
                .collect();
            v.sort();
            v
        };
        assert_eq!(names("*.rs"), [".hidden.rs", "a.rs"]);
        assert_eq!(
            names("**/*.rs"),
            [".hidden.rs", "a.rs", "src/b.rs", "src/deep/c.rs"]
        );
        assert_eq!(names("src/*.rs"), ["src/b.rs"]);
        assert_eq!(names(".git/*.rs"), [".git/d.rs"]);
        let abs = format!("{}/src/**/*.rs", root.display());
        assert_eq!(names(&abs), ["src/b.rs", "src/deep/c.rs"]);
    }
}
