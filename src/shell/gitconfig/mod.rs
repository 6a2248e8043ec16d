//! Would a git command run code from configuration or hooks the agent could have written?
//!
//! git runs programs named in its configuration (`core.fsmonitor`, diff and textconv drivers,
//! clean/smudge filters, `gpg.program`, …) and hooks (`post-index-change` when `git status`
//! refreshes the index), from the repository's, the user's and the system's configuration.
//! A repository can be any folder: `.git` in a directory or above it, or a bare layout (`HEAD`,
//! `objects/`, `refs/`, `config`) that the agent created itself.
//!
//! The check, at decision time, for a directory git would start in:
//! 1. Find every git directory git could use from there: `.git` (a directory or a `gitdir:`
//!    file) and bare layouts in the directory and each parent up to `/` — all of them, not just
//!    the first, so a layout git would skip cannot hide a later one.
//! 2. Collect the configuration files git reads: system, global (`~/.gitconfig`,
//!    `$XDG_CONFIG_HOME/git/config`), each git directory's `config`, `config.worktree`, the
//!    common directory's, and every included file (`include.path`, `includeIf.*.path`, whatever
//!    the condition).
//! 3. A file the agent cannot have changed without the user's approval is **trusted**: it is a
//!    protected path (`.git/…`, `.gitconfig`, `.config/git/…`) or lies outside every directory
//!    the session may write to without asking. Trusted files may name programs, as the user
//!    configured them — unless such a program (or `core.hooksPath`) lies where the agent can
//!    write. An untrusted file may hold only keys on a short list of settings that run nothing;
//!    anything else means git is not auto-allowed.
//! 4. Hooks: `post-index-change` in a hooks directory the agent can write means not
//!    auto-allowed.
//!
//! What git found on disk is cached and kept valid by inotify watches on every directory the
//! answer depends on (a change to a relevant name empties the cache), so a decision costs one
//! non-blocking read of the inotify queue. Untrusted files are read again on every decision.

#[cfg(test)]
mod tests;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

/// The environment git runs with (toolrt's own, which the Bash tool passes on).
#[derive(Debug, Clone, Default)]
pub(crate) struct GitEnv {
    /// `$HOME`.
    pub home: PathBuf,
    /// `$XDG_CONFIG_HOME`.
    pub xdg_config_home: Option<PathBuf>,
    /// `$GIT_CONFIG_GLOBAL`.
    pub global: Option<PathBuf>,
    /// `$GIT_CONFIG_SYSTEM`.
    pub system: Option<PathBuf>,
    /// `$GIT_CONFIG_NOSYSTEM`.
    pub no_system: bool,
    /// `$GIT_DIR`.
    pub git_dir: Option<PathBuf>,
}

impl GitEnv {
    /// From this process's environment, with `home` as the home directory.
    pub(crate) fn from_process(home: &Path) -> GitEnv {
        let var = |k: &str| {
            std::env::var_os(k)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        };
        GitEnv {
            home: home.to_path_buf(),
            xdg_config_home: var("XDG_CONFIG_HOME"),
            global: var("GIT_CONFIG_GLOBAL"),
            system: var("GIT_CONFIG_SYSTEM"),
            no_system: std::env::var_os("GIT_CONFIG_NOSYSTEM")
                .is_some_and(|v| !v.is_empty() && v != "0" && v != "false"),
            git_dir: var("GIT_DIR"),
        }
    }
}

/// The answer for one directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Check {
    /// Nothing git would run there comes from where the agent can write.
    Safe {
        /// The work tree of the nearest repository, if any (for `REV:path`).
        worktree: Option<PathBuf>,
        /// Every configuration file and hooks directory git may read there.
        files: Vec<PathBuf>,
    },
    /// git may run code the agent could have put there, and why.
    Unsafe(String),
}

/// One config file git may read, with what the check needs from it.
#[derive(Debug, Clone)]
struct ConfigFile {
    path: PathBuf,
    /// `(section.[subsection.]name, value)`, section and name lower-cased.
    entries: Vec<(String, String)>,
}

/// What was found on disk for one start directory.
#[derive(Debug, Clone, Default)]
struct Facts {
    exists: bool,
    worktree: Option<PathBuf>,
    /// Work trees and git directories (relative hook and program paths resolve against them).
    bases: Vec<PathBuf>,
    configs: Vec<ConfigFile>,
    hook_dirs: Vec<PathBuf>,
}

/// Checks the directory `start` (absolute). `trusted` says whether a path is out of the
/// agent's reach.
#[cfg(test)]
pub(crate) fn check(start: &Path, env: &GitEnv, trusted: &dyn Fn(&Path) -> bool) -> Check {
    check_reporting(start, env, trusted).0
}

/// Like [`check`], and whether it had to read files that may change without notice (untrusted
/// configuration, hooks in untrusted directories): such an answer must not be reused.
pub(crate) fn check_reporting(
    start: &Path,
    env: &GitEnv,
    trusted: &dyn Fn(&Path) -> bool,
) -> (Check, bool) {
    let facts = cached(start, env);
    let mut fresh = false;
    let c = judge(&facts, env, trusted, &mut fresh);
    (c, fresh)
}

/// A number that changes whenever something watched changed (`None` when nothing is watched,
/// so nothing may be reused). Costs one non-blocking read of the inotify queue.
pub(crate) fn generation() -> Option<u64> {
    let mut c = cache().lock().ok()?;
    #[cfg(target_os = "linux")]
    {
        c.watch.as_ref()?;
        if !c.drain() {
            c.facts.clear();
            c.generation += 1;
        }
        Some(c.generation)
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = &mut c;
        None
    }
}

fn judge(f: &Facts, env: &GitEnv, trusted: &dyn Fn(&Path) -> bool, fresh: &mut bool) -> Check {
    if !f.exists {
        // git cannot start in a directory that does not exist (an earlier part of the same
        // command that could create it keeps git from being auto-allowed on its own).
        return Check::Safe {
            worktree: None,
            files: Vec::new(),
        };
    }
    let mut hook_dirs = f.hook_dirs.clone();
    for c in &f.configs {
        if trusted(&c.path) {
            for (key, value) in &c.entries {
                if key == "core.hookspath" {
                    for b in &f.bases {
                        hook_dirs.push(resolve(value, b, &env.home));
                    }
                } else if runs_program(key) {
                    // The user's own setting: fine, unless the program it names is a file the
                    // agent can write.
                    for word in value.split_whitespace() {
                        let word = word.trim_start_matches('!');
                        if !word.contains('/') {
                            continue;
                        }
                        for b in &f.bases {
                            let p = resolve(word, b, &env.home);
                            if !trusted(&p) {
                                return Check::Unsafe(format!(
                                    "{key} in {} runs {}, which the agent could have written",
                                    c.path.display(),
                                    p.display()
                                ));
                            }
                        }
                    }
                }
            }
        } else {
            // Read again now: the agent may have changed it since it was cached.
            *fresh = true;
            let fresh = match std::fs::read(&c.path) {
                Ok(bytes) => parse(&String::from_utf8_lossy(&bytes)),
                Err(_) => continue,
            };
            if let Some((key, _)) = fresh.iter().find(|(k, _)| !harmless(k)) {
                return Check::Unsafe(format!(
                    "{} sets {key}; it is a git configuration file the agent could have written",
                    c.path.display()
                ));
            }
        }
    }
    let hook_dirs_all = hook_dirs.clone();
    for h in hook_dirs {
        let hook = h.join("post-index-change");
        if trusted(&hook) {
            continue;
        }
        *fresh = true;
        if std::fs::symlink_metadata(&hook).is_ok() {
            return Check::Unsafe(format!(
                "{} is a git hook the agent could have written",
                hook.display()
            ));
        }
    }
    let mut files: Vec<PathBuf> = f.configs.iter().map(|c| c.path.clone()).collect();
    files.extend(hook_dirs_all);
    Check::Safe {
        worktree: f.worktree.clone(),
        files,
    }
}

fn resolve(value: &str, base: &Path, home: &Path) -> PathBuf {
    crate::paths::absolutize(value, base, home)
}

/// Keys whose value git runs as a program in a read-only command.
fn runs_program(key: &str) -> bool {
    let last = key.rsplit('.').next().unwrap_or("");
    matches!(
        key,
        "core.fsmonitor" | "diff.external" | "gpg.program" | "core.pager" | "core.sshcommand"
    ) || (key.starts_with("diff.") && matches!(last, "textconv" | "command"))
        || (key.starts_with("filter.") && matches!(last, "clean" | "smudge" | "process"))
        || (key.starts_with("gpg.") && last == "program")
        || key.starts_with("pager.")
}

/// Settings an untrusted configuration file may hold: none of them runs a program or points
/// git elsewhere.
fn harmless(key: &str) -> bool {
    let section = key.split('.').next().unwrap_or("");
    let last = key.rsplit('.').next().unwrap_or("");
    match section {
        "core" => matches!(
            last,
            "repositoryformatversion"
                | "filemode"
                | "bare"
                | "logallrefupdates"
                | "ignorecase"
                | "precomposeunicode"
                | "symlinks"
                | "autocrlf"
                | "eol"
                | "safecrlf"
                | "quotepath"
                | "abbrev"
                | "compression"
                | "loosecompression"
                | "checkstat"
                | "trustctime"
                | "warnambiguousrefs"
                | "commentchar"
                | "commentstring"
                | "whitespace"
                | "untrackedcache"
                | "splitindex"
                | "preloadindex"
                | "multipackindex"
                | "ignorestat"
                | "protecthfs"
                | "protectntfs"
        ),
        "remote" => matches!(
            last,
            "url" | "pushurl" | "fetch" | "push" | "tagopt" | "prune" | "mirror"
        ),
        "branch" => matches!(
            last,
            "remote" | "merge" | "rebase" | "pushremote" | "description"
        ),
        "user" | "author" | "committer" | "color" | "advice" | "i18n" | "pretty" | "column"
        | "versionsort" => true,
        "init" => last == "defaultbranch",
        "extensions" => matches!(last, "objectformat" | "refstorage" | "worktreeconfig"),
        "gc" => matches!(last, "auto" | "autodetach"),
        "pull" => matches!(last, "rebase" | "ff"),
        "push" => matches!(last, "default" | "autosetupremote"),
        "fetch" => matches!(last, "prune" | "prunetags"),
        "diff" => {
            !key.contains("..")
                && key.matches('.').count() == 1
                && matches!(
                    last,
                    "renames"
                        | "algorithm"
                        | "mnemonicprefix"
                        | "noprefix"
                        | "context"
                        | "interhunkcontext"
                        | "colormoved"
                        | "relative"
                        | "statgraphwidth"
                        | "wserrorhighlight"
                )
        }
        "merge" => key.matches('.').count() == 1 && matches!(last, "conflictstyle" | "ff"),
        "log" => matches!(
            last,
            "date" | "decorate" | "abbrevcommit" | "follow" | "showroot"
        ),
        "status" => matches!(
            last,
            "showuntrackedfiles" | "short" | "branch" | "relativepaths"
        ),
        "rerere" | "rebase" | "commit" | "tag" | "grep" | "blame" => !matches!(
            last,
            "program" | "command" | "editor" | "cmd" | "gpgsign" | "instructionformat"
        ),
        _ => false,
    }
}

/// Parses git's configuration format into `(key, value)` pairs (section and name lower-cased;
/// a bare name is `true`). Lines it cannot read are kept as a key no list allows.
fn parse(text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut section = String::new();
    let mut lines = text.lines().peekable();
    while let Some(raw) = lines.next() {
        let line = raw.trim_start();
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        let rest = if let Some(after) = line.strip_prefix('[') {
            let Some(end) = closing_bracket(after) else {
                out.push(("(unreadable line)".into(), raw.to_string()));
                continue;
            };
            let header = &after[..end];
            section = match header.split_once(char::is_whitespace) {
                Some((name, sub)) => {
                    let sub = sub
                        .trim()
                        .trim_matches('"')
                        .replace("\\\"", "\"")
                        .replace("\\\\", "\\");
                    format!("{}.{sub}", name.to_ascii_lowercase())
                }
                None => match header.split_once('.') {
                    Some((name, sub)) => {
                        format!("{}.{}", name.to_ascii_lowercase(), sub.to_ascii_lowercase())
                    }
                    None => header.to_ascii_lowercase(),
                },
            };
            after[end + 1..].trim_start()
        } else {
            line
        };
        if rest.is_empty() || rest.starts_with('#') || rest.starts_with(';') {
            continue;
        }
        let (name, value_raw) = match rest.split_once('=') {
            Some((n, v)) => (n.trim(), Some(v.to_string())),
            None => (rest.trim(), None),
        };
        let name = name.to_ascii_lowercase();
        let mut value = String::new();
        if let Some(mut v) = value_raw {
            // A trailing backslash continues the value on the next line.
            while v.trim_end().ends_with('\\') && !v.trim_end().ends_with("\\\\") {
                let t = v.trim_end();
                v = t[..t.len() - 1].to_string();
                match lines.next() {
                    Some(n) => v.push_str(n),
                    None => break,
                }
            }
            value = unquote(&v);
        } else {
            value.push_str("true");
        }
        let key = if section.is_empty() {
            name
        } else {
            format!("{section}.{name}")
        };
        out.push((key, value));
    }
    out
}

fn closing_bracket(s: &str) -> Option<usize> {
    let mut in_quote = false;
    let mut prev = ' ';
    for (i, c) in s.char_indices() {
        match c {
            '"' if prev != '\\' => in_quote = !in_quote,
            ']' if !in_quote => return Some(i),
            _ => {}
        }
        prev = c;
    }
    None
}

/// A value with quotes, escapes and trailing comments handled as git does.
fn unquote(v: &str) -> String {
    let mut out = String::new();
    let mut in_quote = false;
    let mut chars = v.trim().chars();
    let mut pending_space = String::new();
    while let Some(c) = chars.next() {
        match c {
            '"' => in_quote = !in_quote,
            '\\' => {
                out.push_str(&pending_space);
                pending_space.clear();
                match chars.next() {
                    Some('n') => out.push('\n'),
                    Some('t') => out.push('\t'),
                    Some('b') => {
                        out.pop();
                    }
                    Some(o) => out.push(o),
                    None => {}
                }
            }
            '#' | ';' if !in_quote => break,
            c if c.is_whitespace() && !in_quote => pending_space.push(c),
            c => {
                out.push_str(&pending_space);
                pending_space.clear();
                out.push(c);
            }
        }
    }
    out
}

fn read_config(path: &Path) -> Option<Vec<(String, String)>> {
    let bytes = std::fs::read(path).ok()?;
    Some(parse(&String::from_utf8_lossy(&bytes)))
}

/// The directory a `gitdir:` file points to.
fn gitfile(path: &Path) -> Option<PathBuf> {
    let text = std::fs::read_to_string(path).ok()?;
    let target = text.lines().next()?.strip_prefix("gitdir:")?.trim();
    let base = path.parent()?;
    Some(crate::paths::normalize(&base.join(target)))
}

fn exists(p: &Path) -> bool {
    std::fs::symlink_metadata(p).is_ok()
}

/// Looks at the file system: every git directory git could use from `start`, and every
/// configuration file it would read. Registers a watch for each directory consulted.
fn gather(start: &Path, env: &GitEnv, w: &mut dyn FnMut(&Path, Option<&str>)) -> Facts {
    let mut f = Facts::default();
    // The lexical path's directories: a symlink swapped on the way is a change.
    let mut lex = PathBuf::from("/");
    for comp in start.iter().skip(1) {
        w(&lex, comp.to_str());
        lex.push(comp);
    }
    let Ok(real) = std::fs::canonicalize(start) else {
        f.bases.push(start.to_path_buf());
        return f;
    };
    f.exists = true;
    let mut gitdirs: Vec<(PathBuf, Option<PathBuf>)> = Vec::new();
    if let Some(d) = &env.git_dir {
        gitdirs.push((
            crate::paths::absolutize(&d.to_string_lossy(), &real, &env.home),
            None,
        ));
    } else {
        let mut cur = Some(real.as_path());
        while let Some(dir) = cur {
            // Only the names that make or configure a git directory matter here.
            w(dir, Some(".git"));
            let dotgit = dir.join(".git");
            match std::fs::symlink_metadata(&dotgit) {
                Ok(m) if m.is_file() => {
                    if let Some(g) = gitfile(&dotgit) {
                        gitdirs.push((g, Some(dir.to_path_buf())));
                    }
                }
                Ok(_) => gitdirs.push((dotgit, Some(dir.to_path_buf()))),
                Err(_) => {}
            }
            if exists(&dir.join("HEAD")) {
                gitdirs.push((dir.to_path_buf(), None));
            }
            cur = dir.parent();
        }
    }
    let mut files: Vec<PathBuf> = Vec::new();
    for (g, worktree) in &gitdirs {
        w(g, Some("config"));
        if f.worktree.is_none() {
            f.worktree = worktree.clone();
        }
        f.bases.extend(worktree.iter().cloned());
        f.bases.push(g.clone());
        files.push(g.join("config"));
        files.push(g.join("config.worktree"));
        f.hook_dirs.push(g.join("hooks"));
        if let Ok(common) = std::fs::read_to_string(g.join("commondir")) {
            let c = crate::paths::normalize(&g.join(common.trim()));
            w(&c, Some("config"));
            files.push(c.join("config"));
            f.hook_dirs.push(c.join("hooks"));
            f.bases.push(c);
        }
    }
    if !env.no_system {
        files.push(
            env.system
                .clone()
                .unwrap_or_else(|| PathBuf::from("/etc/gitconfig")),
        );
    }
    match &env.global {
        Some(g) => files.push(g.clone()),
        None => {
            let xdg = env
                .xdg_config_home
                .clone()
                .unwrap_or_else(|| env.home.join(".config"));
            files.push(xdg.join("git/config"));
            files.push(env.home.join(".gitconfig"));
        }
    }
    let mut seen: Vec<PathBuf> = Vec::new();
    let mut queue: Vec<(PathBuf, usize)> = files.into_iter().map(|p| (p, 0)).collect();
    while let Some((path, depth)) = queue.pop() {
        if seen.contains(&path) || depth > 10 {
            continue;
        }
        seen.push(path.clone());
        watch_file(&path, w);
        let Some(entries) = read_config(&path) else {
            continue;
        };
        let dir = path.parent().unwrap_or(Path::new("/")).to_path_buf();
        for (key, value) in &entries {
            if key == "include.path" || (key.starts_with("includeif.") && key.ends_with(".path")) {
                queue.push((resolve(value, &dir, &env.home), depth + 1));
            }
        }
        f.configs.push(ConfigFile { path, entries });
    }
    for h in &f.hook_dirs {
        watch_file(&h.join("post-index-change"), w);
    }
    f
}

/// Watches the nearest existing directory on the way to `path` for the next name.
fn watch_file(path: &Path, w: &mut dyn FnMut(&Path, Option<&str>)) {
    let mut child = path;
    while let Some(parent) = child.parent() {
        if parent.is_dir() {
            w(parent, child.file_name().and_then(|n| n.to_str()));
            return;
        }
        child = parent;
    }
}

/// The process-wide cache: facts per start directory, valid while no watched name changes.
struct Cache {
    facts: HashMap<PathBuf, std::sync::Arc<Facts>>,
    /// Bumped whenever a watched change empties the cache.
    generation: u64,
    #[cfg(target_os = "linux")]
    watch: Option<Watch>,
}

#[cfg(target_os = "linux")]
struct Watch {
    inotify: nix::sys::inotify::Inotify,
    /// Per watch descriptor, the names that matter in that directory (`None`: any).
    names: HashMap<i32, Option<Vec<String>>>,
}

/// Names in a directory that change what git finds there, besides the ones a watch asks for.
const GIT_NAMES: &[&str] = &[
    ".git",
    "HEAD",
    "objects",
    "refs",
    "commondir",
    "config",
    "config.worktree",
    "hooks",
];

const MAX_WATCHES: usize = 512;

fn cache() -> &'static Mutex<Cache> {
    static C: OnceLock<Mutex<Cache>> = OnceLock::new();
    C.get_or_init(|| {
        Mutex::new(Cache {
            facts: HashMap::new(),
            generation: 0,
            #[cfg(target_os = "linux")]
            watch: {
                use nix::sys::inotify::{InitFlags, Inotify};
                Inotify::init(InitFlags::IN_NONBLOCK | InitFlags::IN_CLOEXEC)
                    .ok()
                    .map(|inotify| Watch {
                        inotify,
                        names: HashMap::new(),
                    })
            },
        })
    })
}

fn cached(start: &Path, env: &GitEnv) -> std::sync::Arc<Facts> {
    use std::sync::Arc;
    let Ok(mut c) = cache().lock() else {
        return Arc::new(gather(start, env, &mut |_, _| {}));
    };
    #[cfg(target_os = "linux")]
    {
        if !c.drain() {
            c.facts.clear();
            c.generation += 1;
        }
        if c.watch.is_none() {
            return Arc::new(gather(start, env, &mut |_, _| {}));
        }
    }
    #[cfg(not(target_os = "linux"))]
    {
        return Arc::new(gather(start, env, &mut |_, _| {}));
    }
    if let Some(f) = c.facts.get(start) {
        return f.clone();
    }
    let mut ok = true;
    let facts = {
        let c = &mut *c;
        let mut w = |dir: &Path, name: Option<&str>| {
            #[cfg(target_os = "linux")]
            if let Some(watch) = c.watch.as_mut() {
                ok &= watch.add(dir, name);
            }
            let _ = (dir, name);
        };
        gather(start, env, &mut w)
    };
    // A change may have happened while looking: only keep facts no event has touched.
    let facts = Arc::new(facts);
    #[cfg(target_os = "linux")]
    if ok && c.drain() {
        c.facts.insert(start.to_path_buf(), facts.clone());
    } else {
        c.facts.clear();
        c.generation += 1;
    }
    facts
}

#[cfg(target_os = "linux")]
impl Cache {
    /// Reads every queued event; false if any touched a relevant name (the cache is stale).
    fn drain(&mut self) -> bool {
        let Some(w) = self.watch.as_mut() else {
            return false;
        };
        let mut clean = true;
        loop {
            match w.inotify.read_events() {
                Ok(events) if events.is_empty() => break,
                Ok(events) => {
                    for e in events {
                        if !w.relevant(&e) {
                            continue;
                        }
                        clean = false;
                    }
                }
                Err(nix::errno::Errno::EAGAIN) => break,
                Err(_) => {
                    clean = false;
                    break;
                }
            }
        }
        clean
    }
}

#[cfg(target_os = "linux")]
impl Watch {
    fn add(&mut self, dir: &Path, name: Option<&str>) -> bool {
        use nix::sys::inotify::AddWatchFlags as F;
        if self.names.len() >= MAX_WATCHES {
            return false;
        }
        let mask = F::IN_CREATE
            | F::IN_DELETE
            | F::IN_MOVED_FROM
            | F::IN_MOVED_TO
            | F::IN_MODIFY
            | F::IN_CLOSE_WRITE
            | F::IN_ATTRIB
            | F::IN_DELETE_SELF
            | F::IN_MOVE_SELF;
        let Ok(wd) = self.inotify.add_watch(dir, mask) else {
            // A directory that does not exist cannot change without its parent changing.
            return dir.exists().then_some(()).is_none();
        };
        let entry = self
            .names
            .entry(wd.as_raw())
            .or_insert_with(|| Some(Vec::new()));
        match (entry.as_mut(), name) {
            (Some(list), Some(n)) => {
                if !list.iter().any(|x| x == n) {
                    list.push(n.to_string());
                }
            }
            (Some(_), None) => *entry = None,
            (None, _) => {}
        }
        true
    }

    fn relevant(&self, e: &nix::sys::inotify::InotifyEvent) -> bool {
        use nix::sys::inotify::AddWatchFlags as F;
        if e.mask
            .intersects(F::IN_Q_OVERFLOW | F::IN_IGNORED | F::IN_DELETE_SELF | F::IN_MOVE_SELF)
        {
            return true;
        }
        let Some(name) = e.name.as_ref().and_then(|n| n.to_str()) else {
            return true;
        };
        match self.names.get(&e.wd.as_raw()) {
            Some(None) | None => true,
            Some(Some(list)) => GIT_NAMES.contains(&name) || list.iter().any(|n| n == name),
        }
    }
}
