//! Where a command's paths are: resolved against its working directories and symlinks, inside
//! the workspace or not, critical for `rm`, and git's work trees and configuration check.

use super::*;

/// A target's paths, resolved against the working directories it may be relative to.
pub(super) enum Resolved {
    /// Absolute paths with every symlink resolution (the lexical path first).
    Paths(Vec<PathBuf>),
    /// Names no file (`/dev/null`, the command's own file descriptors).
    Nothing,
    /// Cannot be placed before the command runs, and why.
    Unknown(String),
}

/// The absolute paths the decision on `command` will look up when it runs from `cwd` on a
/// worker node (with `home` there): what that node must resolve first. At most `limit`; any
/// path beyond is one toolrt cannot place, and the command then asks.
pub(crate) fn paths_named_by(command: &str, cwd: &Path, home: &Path, limit: usize) -> Vec<PathBuf> {
    // Only naming: no workspace, and nothing resolved yet.
    let site = Site {
        cwd,
        home,
        roots: &[],
        node: None,
    };
    let mut out: Vec<PathBuf> = Vec::new();
    for c in &shell::analyse(command).commands {
        let e = &c.effects;
        let targets = (e.reads.iter())
            .chain(&e.lists)
            .chain(&e.trees)
            .chain(&e.writes)
            .chain(&e.redirects)
            .chain(&e.removes)
            .chain(&e.moves);
        // Globs are not expanded on a node, and git's work trees are not looked for there.
        for t in targets.filter(|t| t.exact && !t.glob) {
            for base in site.bases(t, &[]) {
                // As a node's decision names them (`Site::name`): `..` folded lexically.
                let abs = match paths::name_at(&t.path, &base, home, false) {
                    Named::File(abs) => abs,
                    Named::Net { .. } => absolutize(&t.path, &base, home),
                    _ => continue,
                };
                if !out.contains(&abs) {
                    if out.len() == limit {
                        return out;
                    }
                    out.push(abs);
                }
            }
        }
    }
    out
}

impl Policy {
    /// Whether writing `t` could change what git runs: a file git reads (`files`), a name that
    /// makes or configures a git directory, or a path only known when it runs.
    pub(super) fn may_touch_git(
        &self,
        t: &Target,
        worktrees: &[PathBuf],
        files: &[PathBuf],
        site: &Site<'_>,
    ) -> bool {
        const NAMES: [&str; 11] = [
            "HEAD",
            "config",
            "config.worktree",
            "commondir",
            "packed-refs",
            "objects",
            "refs",
            "hooks",
            ".git",
            ".gitconfig",
            ".gitattributes",
        ];
        match self.resolve(t, worktrees, site) {
            Resolved::Paths(cands) => cands.iter().any(|p| {
                files.iter().any(|f| f == p || f.starts_with(p))
                    || p.iter()
                        .any(|c| c.to_str().is_some_and(|c| NAMES.contains(&c)))
            }),
            Resolved::Nothing => false,
            Resolved::Unknown(_) => true,
        }
    }

    /// Runs the git configuration check for every directory git may start in; the work trees
    /// found and the files git reads, or why git could run code the agent wrote.
    pub(super) fn git_check(
        &self,
        dirs: &Cwd,
        mode: Mode,
        site: &Site<'_>,
    ) -> Result<(Vec<PathBuf>, Vec<PathBuf>), String> {
        if let Some(node) = site.node {
            return Err(format!(
                "git runs on worker node {}, whose git configuration toolrt does not check",
                node.node
            ));
        }
        let dirs = site.dirs(dirs);
        if dirs.is_empty() {
            return Err("git runs in a directory only known when it runs".into());
        }
        // A protected file needs the user's approval to change — except in bypassPermissions,
        // where the agent writes it as any other.
        let protected_holds = mode != Mode::BypassPermissions;
        let trusted = |p: &Path| {
            (protected_holds && is_protected(p))
                || !(inside(p, &self.roots) || self.allow.edit_paths.first_match(p).is_some())
        };
        let mut worktrees = Vec::new();
        let mut all_files = Vec::new();
        for d in dirs {
            match &*self.git_check_dir(&d, protected_holds, &trusted) {
                Check::Safe { worktree, files } => {
                    worktrees.extend(worktree.iter().cloned());
                    all_files.extend(files.iter().cloned());
                }
                Check::Unsafe(w) => return Err(w.clone()),
            }
        }
        Ok((worktrees, all_files))
    }

    /// One directory's check, from the cache while the file system has not changed there.
    fn git_check_dir(
        &self,
        dir: &Path,
        protected_holds: bool,
        trusted: &dyn Fn(&Path) -> bool,
    ) -> std::sync::Arc<Check> {
        let generation = gitconfig::generation();
        let key = (dir.to_path_buf(), protected_holds);
        if let Some(g) = generation
            && let Ok(cache) = self.git_checks.by_dir.lock()
            && let Some((at, check)) = cache.get(&key)
            && *at == g
        {
            return check.clone();
        }
        let (check, fresh_reads) = gitconfig::check_reporting(dir, &self.git_env, trusted);
        let check = std::sync::Arc::new(check);
        // A check that read an untrusted file must read it again next time.
        if let Some(g) = generation
            && !fresh_reads
            && let Ok(mut cache) = self.git_checks.by_dir.lock()
        {
            if cache.len() > 256 {
                cache.clear();
            }
            cache.insert(key, (g, check.clone()));
        }
        check
    }

    /// Every candidate inside the workspace or toolrt's output folder, or allowed by a Read or
    /// Edit allow rule: what the Read tool reads without asking.
    pub(super) fn readable(&self, cands: &[PathBuf], site: &Site<'_>) -> bool {
        // toolrt's own output folder is on this node, never on a worker.
        (site.node.is_none() && self.in_output_dir(cands))
            || cands.iter().all(|p| {
                inside(p, site.roots)
                    || self.allow.read_paths.first_match(p).is_some()
                    || self.allow.edit_paths.first_match(p).is_some()
            })
    }

    /// Where a target's path leads: here through this file system, on a worker node through
    /// what the node resolved.
    pub(super) fn resolve(&self, t: &Target, worktrees: &[PathBuf], site: &Site<'_>) -> Resolved {
        if !t.exact {
            return Resolved::Unknown(format!("`{}` is only known when it runs", t.path));
        }
        let bases = site.bases(t, worktrees);
        if bases.is_empty() {
            return Resolved::Unknown(format!(
                "`{}` is relative to a directory only known when it runs",
                t.path
            ));
        }
        let mut out: Vec<PathBuf> = Vec::new();
        for base in &bases {
            let abs = match site.name(&t.path, base) {
                Ok(Some(abs)) => abs,
                Ok(None) => continue,
                Err(w) => return Resolved::Unknown(w),
            };
            if let Some(node) = site.node {
                // Globs are not expanded on a node.
                let Some(cands) = site.candidates(&abs).filter(|_| !t.glob) else {
                    return Resolved::Unknown(format!(
                        "where `{}` leads on worker node {} is not known",
                        t.path, node.node
                    ));
                };
                for c in cands {
                    if !out.contains(&c) {
                        out.push(c);
                    }
                }
            } else if t.glob {
                match paths::expand_glob(&abs, 256) {
                    Some(found) => {
                        if let Some(m) = paths::option_like_match(&t.path, base, &found) {
                            return Resolved::Unknown(format!(
                                "`{}` expands to `{}`, which the program would read as an option",
                                t.path,
                                m.file_name().unwrap_or_default().to_string_lossy()
                            ));
                        }
                        for f in found {
                            for c in candidates(&f) {
                                if !out.contains(&c) {
                                    out.push(c);
                                }
                            }
                        }
                    }
                    None => {
                        return Resolved::Unknown(format!(
                            "`{}` expands to too many paths to check",
                            t.path
                        ));
                    }
                }
            } else {
                for c in candidates(&abs) {
                    if !out.contains(&c) {
                        out.push(c);
                    }
                }
            }
        }
        if out.is_empty() {
            Resolved::Nothing
        } else {
            Resolved::Paths(out)
        }
    }

    /// SEMANTICS.md §3.6 critical `rm` targets: `/`, its direct children, home, the cwd and its parents.
    /// Anything only known when the command runs counts as critical.
    pub(super) fn critical(&self, t: &Target, site: &Site<'_>) -> bool {
        if !t.exact {
            return true;
        }
        let bases = site.relative_to(t);
        if bases.is_empty() {
            return true;
        }
        let (cwd, home) = (site.cwd, site.home);
        bases.iter().any(|base| {
            let abs = match paths::name_at(&t.path, base, home, site.node.is_none()) {
                Named::File(p) => p,
                Named::Device | Named::Fd => return false,
                Named::Net { .. } => return false,
                Named::Unknown(_) => return true,
            };
            if t.glob {
                // The directory before the first glob segment, and whether that segment
                // matches (nearly) everything.
                let mut dir = PathBuf::from("/");
                let mut wide = false;
                for comp in abs.iter().skip(1) {
                    let s = comp.to_string_lossy();
                    if s.contains(['*', '?', '[']) {
                        wide = s.chars().all(|c| matches!(c, '*' | '.'));
                        break;
                    }
                    dir.push(comp);
                }
                return dir == Path::new("/") || (wide && (dir == home || cwd.starts_with(&dir)));
            }
            // Not resolved on the node: it could lead anywhere.
            let Some(cands) = site.candidates(&abs) else {
                return true;
            };
            cands.iter().any(|c| {
                c == Path::new("/")
                    || c.parent() == Some(Path::new("/"))
                    || c == home
                    || cwd.starts_with(c)
            })
        })
    }
}

/// Whether an absolute path goes through the running process's own cwd (`/proc/self/cwd`).
fn names_cwd(path: &str) -> bool {
    path.starts_with("/proc/")
}

impl Site<'_> {
    /// Directories of a working-directory set, absolute.
    pub(super) fn dirs(&self, set: &Cwd) -> Vec<PathBuf> {
        if *set == Cwd::Session {
            return vec![self.cwd.to_path_buf()];
        }
        // `cd link/..` leads beside the link's target, as the kernel resolves it (this file
        // system's view; on a node, lexically).
        (set.dirs().iter())
            .map(|d| match self.node {
                None => crate::paths::absolutize_physical(d, self.cwd, self.home),
                Some(_) => absolutize(d, self.cwd, self.home),
            })
            .collect()
    }

    /// The directories a target's path is relative to, as a path from the command's cwd
    /// (empty: only known when it runs).
    fn relative_to(&self, t: &Target) -> Vec<PathBuf> {
        let absolute = t.path.starts_with('/') || t.path == "~" || t.path.starts_with("~/");
        let dirs = self.dirs(&t.cwd);
        // Absolute paths need the command's cwd too: `/proc/self/cwd/…` is relative to it.
        if dirs.is_empty() && absolute && !names_cwd(&t.path) {
            vec![self.cwd.to_path_buf()]
        } else {
            dirs
        }
    }

    /// The directories a target's path may be relative to: [`Site::relative_to`], or for a
    /// path from the repository's top, its work trees (or every directory above the cwd).
    fn bases(&self, t: &Target, worktrees: &[PathBuf]) -> Vec<PathBuf> {
        let absolute = t.path.starts_with('/') || t.path == "~" || t.path.starts_with("~/");
        if !t.repo_top || absolute {
            return self.relative_to(t);
        }
        if !worktrees.is_empty() {
            return worktrees.to_vec();
        }
        (self.dirs(&t.cwd).iter())
            .flat_map(|d| d.ancestors().map(Path::to_path_buf))
            .collect()
    }

    /// `path` from `base`, absolute; None where it names no file (a device, a descriptor),
    /// or why it cannot be placed.
    fn name(&self, path: &str, base: &Path) -> Result<Option<PathBuf>, String> {
        // On a node `..` folds lexically: this file system's symlinks are not the node's.
        match paths::name_at(path, base, self.home, self.node.is_none()) {
            Named::File(p) => Ok(Some(p)),
            Named::Device | Named::Fd => Ok(None),
            Named::Net { .. } => Ok(Some(absolutize(path, base, self.home))),
            Named::Unknown(w) => Err(w),
        }
    }

    /// An absolute path and what it resolves to through symlinks: on this file system, or as
    /// the node answered (None: the node did not).
    fn candidates(&self, abs: &Path) -> Option<Vec<PathBuf>> {
        match self.node {
            None => Some(candidates(abs)),
            Some(node) => node.resolved(abs).map(<[PathBuf]>::to_vec),
        }
    }
}
