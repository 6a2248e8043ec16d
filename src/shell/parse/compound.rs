//! Compound commands (`if`, loops, `case`, functions, subshells, groups) and `[[ … ]]` tests:
//! their words and the commands in their bodies.

use super::*;

impl Walker {
    fn pseudo(&mut self, display: String, words: &[Word], patterns: &[Word]) -> Command {
        let mut c = Command {
            display,
            kind: Kind::ReadOnly,
            origin: self.origin,
            ..Command::default()
        };
        self.apply_state(&mut c);
        for w in words.iter().chain(patterns) {
            if let Some(h) = &w.hidden {
                c.hide(h.clone());
            }
        }
        for w in words {
            if !w.literal() {
                c.not_understood(format!(
                    "`{}` is only known when the command runs ({})",
                    w.text,
                    w.why.as_deref().unwrap_or("it expands to file names")
                ));
            }
        }
        for w in patterns {
            if !w.exact || w.brace {
                c.not_understood(format!(
                    "the pattern `{}` is only known when it runs",
                    w.text
                ));
            }
        }
        c
    }

    pub(super) fn compound(&mut self, c: &ast::CompoundCommand) {
        match c {
            ast::CompoundCommand::BraceGroup(g) => self.compound_list(&g.list),
            ast::CompoundCommand::Subshell(s) => {
                let saved = self.cwd.clone();
                self.compound_list(&s.list);
                self.cwd = saved;
                self.cd_succeeded = None;
            }
            ast::CompoundCommand::ForClause(f) => {
                let values: Vec<Word> = f
                    .values
                    .iter()
                    .flatten()
                    .map(|w| self.word(&w.value))
                    .collect();
                let mut c = self.pseudo(
                    format!("for {} in {}", f.variable_name, join(&values)),
                    &values,
                    &[],
                );
                self.take_word_state(&mut c);
                if !inert(&f.variable_name) {
                    c.not_understood(format!(
                        "the loop sets {}, which can change what commands do",
                        f.variable_name
                    ));
                    self.altered = Some(format!(
                        "an earlier loop sets {}, which can change what later commands do",
                        f.variable_name
                    ));
                }
                self.commands.push(c);
                self.loop_body(&[&f.body.list]);
            }
            ast::CompoundCommand::CaseClause(cc) => {
                let value = self.word(&cc.value.value);
                let patterns: Vec<Word> = cc
                    .cases
                    .iter()
                    .flat_map(|i| i.patterns.iter())
                    .map(|p| self.word(&p.value))
                    .collect();
                let mut c = self.pseudo(
                    format!("case {} in …", value.text),
                    std::slice::from_ref(&value),
                    &patterns,
                );
                self.take_word_state(&mut c);
                self.commands.push(c);
                let saved = self.cwd.clone();
                let mut after = saved.clone();
                for item in &cc.cases {
                    if let Some(list) = &item.cmd {
                        self.cwd = saved.clone();
                        self.compound_list(list);
                        after = after.union(&self.cwd);
                    }
                }
                self.cwd = after;
            }
            ast::CompoundCommand::IfClause(i) => {
                self.compound_list(&i.condition);
                let saved = self.cwd.clone();
                self.compound_list(&i.then);
                let mut after = self.cwd.clone();
                for e in i.elses.iter().flatten() {
                    self.cwd = saved.clone();
                    if let Some(c) = &e.condition {
                        self.compound_list(c);
                    }
                    self.compound_list(&e.body);
                    after = after.union(&self.cwd);
                }
                self.cwd = after.union(&saved);
            }
            ast::CompoundCommand::WhileClause(w) | ast::CompoundCommand::UntilClause(w) => {
                self.loop_body(&[&w.0, &w.1.list]);
            }
            ast::CompoundCommand::Arithmetic(e) => {
                let mut c = self.pseudo(format!("(({}))", e.expr.value), &[], &[]);
                if !word::arithmetic_is_literal(&e.expr.value) {
                    c.hide("arithmetic evaluates variables, whose values may hold commands");
                }
                self.commands.push(c);
            }
            ast::CompoundCommand::ArithmeticForClause(f) => {
                let mut c = self.pseudo("for ((…))".into(), &[], &[]);
                let literal = [&f.initializer, &f.condition, &f.updater]
                    .into_iter()
                    .flatten()
                    .all(|e| word::arithmetic_is_literal(&e.value));
                if !literal {
                    c.hide("arithmetic evaluates variables, whose values may hold commands");
                }
                self.commands.push(c);
                self.loop_body(&[&f.body.list]);
            }
            ast::CompoundCommand::Coprocess(c) => {
                let saved = self.cwd.clone();
                self.command(&c.body);
                self.cwd = saved;
                self.cd_succeeded = None;
            }
        }
    }

    /// `[[ … ]]`: analysed, not skipped. Arithmetic comparisons evaluate their operands.
    pub(super) fn extended_test(&mut self, e: &ast::ExtendedTestExpr) {
        let mut words = Vec::new();
        let mut c = self.pseudo("[[ … ]]".into(), &[], &[]);
        self.test_expr(e, &mut c, &mut words);
        self.take_word_state(&mut c);
        c.display = format!("[[ {e} ]]");
        self.commands.push(c);
    }

    fn test_expr(&mut self, e: &ast::ExtendedTestExpr, c: &mut Command, words: &mut Vec<Word>) {
        use ast::{BinaryPredicate as B, UnaryPredicate as U};
        match e {
            ast::ExtendedTestExpr::And(a, b) | ast::ExtendedTestExpr::Or(a, b) => {
                self.test_expr(a, c, words);
                self.test_expr(b, c, words);
            }
            ast::ExtendedTestExpr::Not(a) | ast::ExtendedTestExpr::Parenthesized(a) => {
                self.test_expr(a, c, words)
            }
            ast::ExtendedTestExpr::UnaryTest(pred, w) => {
                let w = self.word(&w.value);
                self.operand(&w, c);
                match pred {
                    U::ShellVariableIsSetAndAssigned | U::ShellVariableIsSetAndNameRef => {
                        if w.text.contains('[') {
                            c.hide("[[ -v ]] on an array element evaluates its subscript");
                        }
                    }
                    U::StringHasZeroLength
                    | U::StringHasNonZeroLength
                    | U::ShellOptionEnabled
                    | U::FdIsOpenTerminal => {}
                    _ => c.effects.lists.extend(target(&w, &self.cwd)),
                }
                words.push(w);
            }
            ast::ExtendedTestExpr::BinaryTest(pred, a, b) => {
                let a = self.word(&a.value);
                let b = self.word(&b.value);
                self.operand(&a, c);
                let pattern_rhs = matches!(
                    pred,
                    B::StringExactlyMatchesPattern
                        | B::StringDoesNotExactlyMatchPattern
                        | B::StringMatchesRegex
                );
                if pattern_rhs {
                    if !b.exact || b.brace {
                        c.not_understood(format!(
                            "the pattern `{}` is only known when it runs",
                            b.text
                        ));
                    }
                    if let Some(h) = &b.hidden {
                        c.hide(h.clone());
                    }
                } else {
                    self.operand(&b, c);
                }
                match pred {
                    B::ArithmeticEqualTo
                    | B::ArithmeticNotEqualTo
                    | B::ArithmeticLessThan
                    | B::ArithmeticLessThanOrEqualTo
                    | B::ArithmeticGreaterThan
                    | B::ArithmeticGreaterThanOrEqualTo => {
                        let numeric = |w: &Word| {
                            w.exact && word::arithmetic_is_literal(&w.text) && !w.text.is_empty()
                        };
                        if !numeric(&a) || !numeric(&b) {
                            c.hide(
                                "an arithmetic comparison in [[ ]] evaluates its operands, whose values may hold commands",
                            );
                        }
                    }
                    B::FilesReferToSameDeviceAndInodeNumbers
                    | B::LeftFileIsNewerOrExistsWhenRightDoesNot
                    | B::LeftFileIsOlderOrDoesNotExistWhenRightDoes => {
                        c.effects.lists.extend(target(&a, &self.cwd));
                        c.effects.lists.extend(target(&b, &self.cwd));
                    }
                    _ => {}
                }
                words.push(a);
                words.push(b);
            }
        }
    }

    fn operand(&self, w: &Word, c: &mut Command) {
        if let Some(h) = &w.hidden {
            c.hide(h.clone());
        }
        if !w.literal() {
            c.not_understood(format!(
                "`{}` is only known when the command runs ({})",
                w.text,
                w.why.as_deref().unwrap_or("it expands to file names")
            ));
        }
    }
}
