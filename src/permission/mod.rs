//! The permission engine: settings and flags compiled once into a [`Policy`] that decides every
//! call as docs/SEMANTICS.md §1–3 states.
//!
//! # Layout
//! - `rule`: the rule grammar (`Tool`, `Tool(specifier)`), parsed once, printed back verbatim.
//! - `pattern`: Bash specifiers (exact, `*`, word-boundary ` *`, trailing `:*`).
//! - `bash`: Bash commands judged against the rules, part by part, from the shell analysis
//!   of [`crate::shell`].
//! - `path_rule`: path specifiers, anchors, symlinks, protected paths.
//! - `domain`: `WebFetch(domain:…)`.
//! - `policy`: settings intake ([`PolicyBuilder`]) and the decision order ([`Policy::decide`]).
//! - `decision`: [`Decision`] and the words the model and humans get.
//! - `chain`: a call in an agent scope, decided at every level of the scope's [`Chain`].

mod bash;
mod chain;
mod decision;
mod domain;
mod path_rule;
mod pattern;
mod policy;
mod rule;
mod stage;

#[cfg(test)]
#[rustfmt::skip] // one table row per line
mod tests;

pub(crate) use bash::paths_named_by;
pub(crate) use chain::{Chain, Level, narrow_mode};
pub use decision::{
    Behavior, DecidedBy, Decision, HookVerdict, Mode, RuleKind, SubcommandVerdict, UnknownMode,
};
pub(crate) use domain::DomainPattern;
pub(crate) use pattern::BashPattern;
pub use policy::PolicyError;
pub(crate) use policy::{DecisionRequest, Located, Policy, PolicyBuilder};
pub use rule::RuleError;
pub(crate) use rule::{EDIT_TOOLS, READ_TOOLS, Rule, has_specifier_grammar};
pub(crate) use stage::{Permission, Query, RuleFilter, check_rule};
