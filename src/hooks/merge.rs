//! Combining the outputs of every hook of one event into one result (docs/SEMANTICS.md §4.4).
//!
//! Inputs arrive in configuration order, whatever order the hooks finished in, so every merge
//! here is deterministic. `shorten` is applied to each hook-supplied text the model or client
//! will see (the runner passes the 10,000-character externalizer; tests pass the identity).

use serde_json::{Map, Value};

use super::config::HookEvent;
use super::protocol::{
    HookOutput, HookPermission, permission_request_verdict, post_verdict, pre_tool_use_verdict,
};

/// A rewritten call input and the hook that wrote it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct UpdatedInput {
    /// The whole new input.
    pub input: Map<String, Value>,
    /// Which hook rewrote it (its command, or `in-process hook #n`).
    pub hook: String,
}

/// The merged PreToolUse verdict.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct PreToolUseResult {
    /// deny > defer > ask > allow across hooks; `None` when no hook decided.
    pub permission: Option<HookPermission>,
    /// The reasons given with the winning decision (`permissionDecisionReason`, or the exit-2
    /// reason): on deny each names its hook (for the model); on ask they are the hooks' own
    /// words (for the client's `permission_request`).
    pub reason: Option<String>,
    /// The last rewrite in configuration order.
    pub updated_input: Option<UpdatedInput>,
    /// `additionalContext` texts in configuration order, already labelled
    /// (`[PreToolUse hook context] …`), to append beside the result.
    pub additional_context: Vec<String>,
    /// `stopReason` when a hook said `continue: false` (first in configuration order).
    pub stop: Option<String>,
}

/// A PermissionRequest hook decision.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum PermissionRequestDecision {
    /// Allow, optionally with a rewritten input (to be re-validated and re-checked against the
    /// deny and ask rules).
    Allow {
        /// The rewritten input, if any.
        updated_input: Option<Map<String, Value>>,
    },
    /// Deny, optionally with a message for the model.
    Deny {
        /// The text for the model, naming the hook.
        message: Option<String>,
    },
}

/// The merged PermissionRequest verdict.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct PermissionRequestResult {
    /// Deny beats allow; `None` means ask the client as before.
    pub decision: Option<PermissionRequestDecision>,
    /// `stopReason` when a hook said `continue: false`.
    pub stop: Option<String>,
}

/// The merged PostToolUse / PostToolUseFailure verdict.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct PostToolResult {
    /// Texts for the model, already labelled (`[PostToolUse hook feedback] …`), in
    /// configuration order; append them to the kept result content.
    pub feedback: Vec<String>,
    /// `updatedToolOutput` (PostToolUse only): replaces the content; last in configuration
    /// order wins.
    pub updated_output: Option<String>,
    /// `stopReason` when a hook said `continue: false`.
    pub stop: Option<String>,
}

/// The merged PostToolBatch verdict.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct PostBatchResult {
    /// Labelled texts (`[PostToolBatch hook feedback] …`) for the `batch_end` event's
    /// `hook_feedback` field.
    pub feedback: Vec<String>,
    /// `stopReason` when a hook said `continue: false`.
    pub stop: Option<String>,
}

/// One hook's output with the label naming it, in configuration order.
pub(crate) type Labelled<'a> = (&'a str, &'a HookOutput);

fn rank(p: HookPermission) -> u8 {
    match p {
        HookPermission::Allow => 1,
        HookPermission::Ask => 2,
        HookPermission::Defer => 3,
        HookPermission::Deny => 4,
    }
}

/// Merges PreToolUse outputs.
pub(crate) fn merge_pre_tool_use(
    outputs: &[Labelled<'_>],
    shorten: &mut dyn FnMut(String) -> String,
) -> PreToolUseResult {
    let verdicts: Vec<_> = outputs
        .iter()
        .map(|(label, out)| (*label, pre_tool_use_verdict(out)))
        .collect();
    let mut result = PreToolUseResult {
        permission: verdicts
            .iter()
            .filter_map(|(_, v)| v.permission)
            .max_by_key(|p| rank(*p)),
        ..Default::default()
    };
    if let Some(winner) = result.permission {
        let reasons: Vec<String> = verdicts
            .iter()
            .filter(|(_, v)| v.permission == Some(winner))
            .filter_map(|(label, v)| {
                let reason = v.reason.clone().or_else(|| {
                    (winner == HookPermission::Deny).then(|| "blocked by hook".to_owned())
                })?;
                // An ask's reason goes to the client's permission_request as the hook wrote it.
                if winner == HookPermission::Ask {
                    return Some(shorten(reason));
                }
                Some(format!(
                    "{} (PreToolUse hook `{}`)",
                    shorten(reason),
                    cut(label, 200)
                ))
            })
            .collect();
        if !reasons.is_empty() {
            result.reason = Some(reasons.join("\n"));
        }
    }
    result.updated_input = verdicts.iter().rev().find_map(|(label, v)| {
        v.updated_input.clone().map(|input| UpdatedInput {
            input,
            hook: (*label).to_owned(),
        })
    });
    for (_, v) in &verdicts {
        if let Some(ctx) = &v.additional_context {
            result.additional_context.push(format!(
                "[PreToolUse hook context] {}",
                shorten(ctx.clone())
            ));
        }
    }
    result.stop = verdicts
        .iter()
        .find_map(|(_, v)| v.stop.clone())
        .map(&mut *shorten);
    result
}

/// Merges PermissionRequest outputs: any deny wins; among allows the last rewrite wins.
pub(crate) fn merge_permission_request(
    outputs: &[Labelled<'_>],
    shorten: &mut dyn FnMut(String) -> String,
) -> PermissionRequestResult {
    let verdicts: Vec<_> = outputs
        .iter()
        .map(|(label, out)| (*label, permission_request_verdict(out)))
        .collect();
    let stop = verdicts
        .iter()
        .find_map(|(_, v)| v.stop.clone())
        .map(&mut *shorten);
    let denials: Vec<String> = verdicts
        .iter()
        .filter(|(_, v)| v.allow == Some(false))
        .map(|(label, v)| {
            let msg = v
                .message
                .clone()
                .unwrap_or_else(|| "denied by hook".to_owned());
            format!(
                "{} (PermissionRequest hook `{}`)",
                shorten(msg),
                cut(label, 200)
            )
        })
        .collect();
    let decision = if !denials.is_empty() {
        Some(PermissionRequestDecision::Deny {
            message: Some(denials.join("\n")),
        })
    } else if verdicts.iter().any(|(_, v)| v.allow == Some(true)) {
        Some(PermissionRequestDecision::Allow {
            updated_input: verdicts
                .iter()
                .rev()
                .find_map(|(_, v)| v.updated_input.clone()),
        })
    } else {
        None
    };
    PermissionRequestResult { decision, stop }
}

/// Merges PostToolUse / PostToolUseFailure / PostToolBatch outputs.
pub(crate) fn merge_post(
    event: HookEvent,
    outputs: &[Labelled<'_>],
    shorten: &mut dyn FnMut(String) -> String,
) -> PostToolResult {
    let mut result = PostToolResult::default();
    for (_, out) in outputs {
        let v = post_verdict(event, out);
        for text in v.feedback {
            result
                .feedback
                .push(format!("[{event} hook feedback] {}", shorten(text)));
        }
        if v.updated_output.is_some() {
            result.updated_output = v.updated_output;
        }
        if result.stop.is_none() {
            result.stop = v.stop.map(&mut *shorten);
        }
    }
    result
}

/// The first `max` characters of `s` (whole characters, never a split code point).
pub(crate) fn cut(s: &str, max: usize) -> &str {
    match s.char_indices().nth(max) {
        Some((i, _)) => &s[..i],
        None => s,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hooks::protocol::HookStatus;
    use serde_json::json;

    fn decide(d: &str) -> HookOutput {
        HookOutput::json(
            json!({"hookSpecificOutput": {"permissionDecision": d, "permissionDecisionReason": format!("because {d}")}}),
        )
    }

    fn merged(outputs: &[HookOutput]) -> PreToolUseResult {
        let labels: Vec<String> = (0..outputs.len()).map(|i| format!("hook{i}")).collect();
        let l: Vec<Labelled<'_>> = labels.iter().map(String::as_str).zip(outputs).collect();
        merge_pre_tool_use(&l, &mut |s| s)
    }

    #[test]
    fn precedence_table() {
        use HookPermission::*;
        let none = HookOutput::none();
        let timeout = HookOutput::without_decision(HookStatus::Timeout);
        let rows: Vec<(Vec<HookOutput>, Option<HookPermission>)> = vec![
            (vec![], None),
            (vec![none.clone()], None),
            (vec![decide("allow")], Some(Allow)),
            (vec![decide("allow"), decide("ask")], Some(Ask)),
            (vec![decide("ask"), decide("defer")], Some(Defer)),
            (
                vec![decide("defer"), decide("deny"), decide("allow")],
                Some(Deny),
            ),
            (vec![decide("allow"), HookOutput::block("x")], Some(Deny)),
            (
                vec![decide("allow"), none.clone(), timeout.clone()],
                Some(Allow),
            ),
            // A timed-out hook gives no decision.
            (vec![timeout], None),
            // A non-blocking error gives none either.
            (vec![HookOutput::error("crash"), decide("ask")], Some(Ask)),
        ];
        for (outputs, want) in rows {
            assert_eq!(merged(&outputs).permission, want, "{outputs:?}");
        }
    }

    #[test]
    fn reasons_name_the_hook_and_come_from_winners() {
        let r = merged(&[
            decide("ask"),
            decide("deny"),
            HookOutput::block("stderr text"),
        ]);
        assert_eq!(
            r.reason.as_deref(),
            Some("because deny (PreToolUse hook `hook1`)\nstderr text (PreToolUse hook `hook2`)")
        );
        let r = merged(&[HookOutput::json(json!({"decision": "block"}))]);
        assert_eq!(
            r.reason.as_deref(),
            Some("blocked by hook (PreToolUse hook `hook0`)")
        );
        // Allow without a reason: no reason.
        assert_eq!(
            merged(&[HookOutput::json(json!({"decision": "approve"}))]).reason,
            None
        );
    }

    #[test]
    fn last_updated_input_in_configuration_order_wins() {
        let rewrite = |cmd: &str| {
            HookOutput::json(json!({"hookSpecificOutput": {"updatedInput": {"command": cmd}}}))
        };
        let r = merged(&[
            rewrite("first"),
            HookOutput::none(),
            rewrite("second"),
            HookOutput::none(),
        ]);
        let u = r.updated_input.unwrap();
        assert_eq!(u.hook, "hook2");
        assert_eq!(
            u.input,
            json!({"command": "second"}).as_object().cloned().unwrap()
        );
    }

    #[test]
    fn context_and_stop() {
        let ctx =
            |c: &str| HookOutput::json(json!({"hookSpecificOutput": {"additionalContext": c}}));
        let r = merged(&[
            ctx("one"),
            HookOutput::json(json!({"continue": false, "stopReason": "first stop"})),
            ctx("two"),
            HookOutput::json(json!({"continue": false, "stopReason": "second stop"})),
        ]);
        assert_eq!(
            r.additional_context,
            [
                "[PreToolUse hook context] one",
                "[PreToolUse hook context] two"
            ]
        );
        assert_eq!(r.stop.as_deref(), Some("first stop"));
    }

    #[test]
    fn permission_request_merge() {
        let allow = |input: Value| {
            HookOutput::json(
                json!({"hookSpecificOutput": {"decision": {"behavior": "allow", "updatedInput": input}}}),
            )
        };
        let deny = HookOutput::json(
            json!({"hookSpecificOutput": {"decision": {"behavior": "deny", "message": "no"}}}),
        );
        let run = |outs: &[HookOutput]| {
            let l: Vec<Labelled<'_>> = outs.iter().map(|o| ("h", o)).collect();
            merge_permission_request(&l, &mut |s| s)
        };
        assert_eq!(run(&[]).decision, None);
        assert_eq!(run(&[HookOutput::block("ignored")]).decision, None);
        assert_eq!(
            run(&[allow(json!({"a": 1})), allow(json!({"a": 2}))]).decision,
            Some(PermissionRequestDecision::Allow {
                updated_input: json!({"a": 2}).as_object().cloned()
            })
        );
        assert_eq!(
            run(&[allow(json!({"a": 1})), deny]).decision,
            Some(PermissionRequestDecision::Deny {
                message: Some("no (PermissionRequest hook `h`)".into())
            })
        );
    }

    #[test]
    fn post_merge_labels_and_last_output_wins() {
        let outs = [
            HookOutput::block("lint failed"),
            HookOutput::json(
                json!({"hookSpecificOutput": {"updatedToolOutput": "A", "additionalContext": "c"}}),
            ),
            HookOutput::json(json!({"hookSpecificOutput": {"updatedToolOutput": "B"}})),
        ];
        let l: Vec<Labelled<'_>> = outs.iter().map(|o| ("h", o)).collect();
        let r = merge_post(HookEvent::PostToolUse, &l, &mut |s| s);
        assert_eq!(
            r.feedback,
            [
                "[PostToolUse hook feedback] lint failed",
                "[PostToolUse hook feedback] c"
            ]
        );
        assert_eq!(r.updated_output.as_deref(), Some("B"));
        let r = merge_post(HookEvent::PostToolBatch, &l[..1], &mut |s| s);
        assert_eq!(r.feedback, ["[PostToolBatch hook feedback] lint failed"]);
    }

    #[test]
    fn shorten_is_applied_to_hook_texts() {
        let outs = [HookOutput::block("x".repeat(20))];
        let l: Vec<Labelled<'_>> = outs.iter().map(|o| ("h", o)).collect();
        let r = merge_post(HookEvent::PostToolUse, &l, &mut |s| {
            format!("<{}>", s.len())
        });
        assert_eq!(r.feedback, ["[PostToolUse hook feedback] <20>"]);
    }

    #[test]
    fn cut_is_char_safe() {
        assert_eq!(cut("héllo", 2), "hé");
        assert_eq!(cut("ab", 5), "ab");
    }
}
