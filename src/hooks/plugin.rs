//! Plugins given with `--plugin-dir`: a directory whose `hooks/hooks.json` (and any hook files
//! its manifest `.claude-plugin/plugin.json` names under `hooks`) configures hooks that run with
//! `CLAUDE_PLUGIN_ROOT` and `CLAUDE_PLUGIN_DATA` set to the plugin's own directories.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::config::PluginInfo;

/// One hooks file of a plugin: where it is and its `hooks` object.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct PluginHooks {
    /// The file (for errors and warnings).
    pub file: PathBuf,
    /// Its `hooks` value, in the format of a settings file's `hooks`.
    pub hooks: Value,
}

/// A loaded plugin: who it is and its hooks files, in load order.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Plugin {
    /// Name, root and data directory.
    pub info: PluginInfo,
    /// Its hooks (none is fine: a plugin may only carry things toolrt has no use for).
    pub hooks: Vec<PluginHooks>,
}

/// A plugin that cannot be loaded; `Display` names the directory or file and what was wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("--plugin-dir {dir}: {message}")]
pub struct PluginError {
    /// The directory as given.
    pub dir: String,
    /// What was wrong (naming the file when it is one of the plugin's files).
    pub message: String,
}

/// Loads the plugin in `dir` (relative to the process's working directory, as `--settings`
/// files are). Its data directory is `<data_root>/<plugin name>`; it is created when a hook of
/// the plugin first runs.
pub(crate) fn load(dir: &Path, data_root: &Path) -> Result<Plugin, PluginError> {
    let err = |message: String| PluginError {
        dir: dir.display().to_string(),
        message,
    };
    let root = std::path::absolute(dir).map_err(|e| err(format!("{e}")))?;
    let root = std::fs::canonicalize(&root).map_err(|e| err(format!("{e}")))?;
    if !root.is_dir() {
        return Err(err("not a directory".into()));
    }
    let manifest_path = root.join(".claude-plugin").join("plugin.json");
    let manifest = match std::fs::read_to_string(&manifest_path) {
        Ok(text) => Some(read_json(&manifest_path, &text).map_err(&err)?),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(err(format!("{}: {e}", manifest_path.display()))),
    };
    let name = match manifest.as_ref().and_then(|m| m.get("name")) {
        None => root
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "plugin".into()),
        Some(Value::String(n)) if valid_name(n) => n.clone(),
        Some(_) => {
            return Err(err(format!(
                "{}: name: expected a plugin name (letters, digits, `-`, `_`, `.`)",
                manifest_path.display()
            )));
        }
    };
    let mut hooks = Vec::new();
    let default = root.join("hooks").join("hooks.json");
    if default.is_file() {
        hooks.push(hooks_file(&default).map_err(&err)?);
    }
    match manifest.as_ref().and_then(|m| m.get("hooks")) {
        None | Some(Value::Null) => {}
        Some(Value::String(rel)) => {
            let file = root.join(rel);
            if file != default {
                hooks.push(hooks_file(&file).map_err(&err)?);
            }
        }
        Some(Value::Array(rels)) => {
            for (i, rel) in rels.iter().enumerate() {
                let Value::String(rel) = rel else {
                    return Err(err(format!(
                        "{}: hooks[{i}]: expected a path relative to the plugin",
                        manifest_path.display()
                    )));
                };
                let file = root.join(rel);
                if file != default {
                    hooks.push(hooks_file(&file).map_err(&err)?);
                }
            }
        }
        Some(inline @ Value::Object(_)) => hooks.push(PluginHooks {
            file: manifest_path.clone(),
            hooks: unwrap_hooks(inline)
                .cloned()
                .unwrap_or_else(|| inline.clone()),
        }),
        Some(_) => {
            return Err(err(format!(
                "{}: hooks: expected a path, a list of paths or a hooks object",
                manifest_path.display()
            )));
        }
    }
    Ok(Plugin {
        info: PluginInfo {
            data: data_root.join(&name),
            name,
            root,
        },
        hooks,
    })
}

fn valid_name(n: &str) -> bool {
    !n.is_empty()
        && n != "."
        && n != ".."
        && n.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

/// A hooks file: `{"description"?: …, "hooks": {<event>: […]}}`.
fn hooks_file(file: &Path) -> Result<PluginHooks, String> {
    let text = std::fs::read_to_string(file).map_err(|e| format!("{}: {e}", file.display()))?;
    let value = read_json(file, &text)?;
    let hooks = unwrap_hooks(&value).cloned().ok_or_else(|| {
        format!(
            "{}: expected an object with a `hooks` object (as in settings files)",
            file.display()
        )
    })?;
    Ok(PluginHooks {
        file: file.to_path_buf(),
        hooks,
    })
}

fn unwrap_hooks(v: &Value) -> Option<&Value> {
    v.get("hooks").filter(|h| h.is_object())
}

fn read_json(file: &Path, text: &str) -> Result<Value, String> {
    let v: Value = serde_json::from_str(text)
        .map_err(|e| format!("{}: not valid JSON: {e}", file.display()))?;
    if !v.is_object() {
        return Err(format!("{}: expected a JSON object", file.display()));
    }
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn write(path: &Path, v: &Value) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, v.to_string()).unwrap();
    }

    #[test]
    fn loads_hooks_and_names() {
        let tmp = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(tmp.path()).unwrap();
        let hooks = json!({"hooks": {"PreToolUse": []}});
        // No manifest: the directory's name.
        write(&base.join("one/hooks/hooks.json"), &hooks);
        let p = load(&base.join("one"), Path::new("/data")).unwrap();
        assert_eq!(p.info.name, "one");
        assert_eq!(p.info.root, base.join("one"));
        assert_eq!(p.info.data, PathBuf::from("/data/one"));
        assert_eq!(p.hooks.len(), 1);
        assert_eq!(p.hooks[0].hooks, json!({"PreToolUse": []}));
        // A manifest naming it and an extra hooks file.
        write(
            &base.join("two/.claude-plugin/plugin.json"),
            &json!({"name": "fmt", "hooks": "./extra.json"}),
        );
        write(&base.join("two/extra.json"), &hooks);
        let p = load(&base.join("two"), Path::new("/d")).unwrap();
        assert_eq!(p.info.name, "fmt");
        assert_eq!(p.hooks.len(), 1);
        // No hooks at all is fine.
        std::fs::create_dir_all(base.join("three")).unwrap();
        assert!(
            load(&base.join("three"), Path::new("/d"))
                .unwrap()
                .hooks
                .is_empty()
        );
    }

    #[test]
    fn errors_name_the_directory_and_file() {
        let tmp = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(tmp.path()).unwrap();
        let e = load(Path::new("/no/such/plugin"), Path::new("/d")).unwrap_err();
        assert!(
            e.to_string().starts_with("--plugin-dir /no/such/plugin: "),
            "{e}"
        );
        std::fs::write(base.join("file"), "x").unwrap();
        let e = load(&base.join("file"), Path::new("/d")).unwrap_err();
        assert!(e.to_string().ends_with("file: not a directory"), "{e}");
        std::fs::create_dir_all(base.join("bad/hooks")).unwrap();
        std::fs::write(base.join("bad/hooks/hooks.json"), "{").unwrap();
        let e = load(&base.join("bad"), Path::new("/d")).unwrap_err();
        assert!(e.to_string().contains("hooks.json: not valid JSON"), "{e}");
        write(
            &base.join("flat/hooks/hooks.json"),
            &json!({"PreToolUse": []}),
        );
        let e = load(&base.join("flat"), Path::new("/d")).unwrap_err();
        assert!(e.to_string().contains("with a `hooks` object"), "{e}");
        write(
            &base.join("named/.claude-plugin/plugin.json"),
            &json!({"name": "../escape"}),
        );
        let e = load(&base.join("named"), Path::new("/d")).unwrap_err();
        assert!(
            e.to_string().contains("name: expected a plugin name"),
            "{e}"
        );
    }
}
