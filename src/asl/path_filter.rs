//! Filter expressions of JSONPath (`[?(@.price < 10 && @.category == 'fiction')]`) as Jayway
//! JsonPath, AWS's evaluator, reads and evaluates them.
//!
//! Grammar (Jayway's `FilterCompiler`):
//!
//! ```text
//! LogicalOR      = LogicalAND { '||' LogicalAND }
//! LogicalAND     = Operand { '&&' Operand }
//! Operand        = '(' LogicalOR ')' | '!' Operand | Relation
//! Relation       = Value [ Operator Value ]        (a lone path is an existence test)
//! Value          = '@…' | '$…' | '!@…' | 'string' | "string" | number | true | false | null
//!                | JSON array or object | /regex/flags
//! Operator       = == != < <= > >= =~ in nin subsetof anyof noneof size empty contains
//! ```
//!
//! Value rules (Jayway's `EvaluatorFactory` and `ValueNode`s): `==` compares numbers as numbers
//! and a number with a string by text (`1 == '1'`); `<`-style operators compare two numbers or
//! two strings, and anything else is false; a path that finds nothing is *undefined*: every
//! comparison with it is false except `!=`; `=~` matches the whole string.
//!
//! One dialect point goes beyond Jayway: an unquoted word on the right (`@.Name==Receipt`) is a
//! number literal to Jayway, which then fails. AWS accepts such definitions (published ones use
//! them); sfn-local reads the word as the string its author meant and [`Filter::notes`] says so,
//! for validate to report as a WARNING.

use crate::asl::path::Path;
use serde_json::Value;
use std::cmp::Ordering;

/// A compiled filter predicate.
#[derive(Debug, Clone)]
pub struct Filter {
    expr: Expr,
    notes: Vec<String>,
}

#[derive(Debug, Clone)]
enum Expr {
    Or(Vec<Expr>),
    And(Vec<Expr>),
    Not(Box<Expr>),
    Exists {
        path: Box<Path>,
        relative: bool,
        want: bool,
    },
    Relation(Operand, Op, Operand),
}

#[derive(Debug, Clone)]
enum Operand {
    /// `@…` (relative: true) or `$…`.
    Path {
        path: Box<Path>,
        relative: bool,
    },
    Literal(Value),
    Regex(regex::Regex),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    Regex,
    In,
    Nin,
    SubsetOf,
    AnyOf,
    NoneOf,
    Size,
    Empty,
    Contains,
}

impl Op {
    fn parse(s: &str) -> Option<Op> {
        Some(match s {
            "==" => Op::Eq,
            "!=" | "<>" => Op::Ne,
            "<" => Op::Lt,
            "<=" => Op::Le,
            ">" => Op::Gt,
            ">=" => Op::Ge,
            "=~" => Op::Regex,
            "in" => Op::In,
            "nin" => Op::Nin,
            "subsetof" => Op::SubsetOf,
            "anyof" => Op::AnyOf,
            "noneof" => Op::NoneOf,
            "size" => Op::Size,
            "empty" => Op::Empty,
            "contains" => Op::Contains,
            _ => return None,
        })
    }
}

impl Filter {
    /// Parses the inside of `[?( … )]`, given as `( … )` (the text after `?`).
    pub fn parse(text: &str) -> Result<Filter, String> {
        let t = text.trim();
        if !(t.starts_with('(') && t.ends_with(')')) {
            return Err(format!(
                "a filter must be written [?( ... )], not [?{text}]"
            ));
        }
        let mut p = Parser {
            s: t,
            pos: 0,
            notes: Vec::new(),
            depth: 0,
        };
        let expr = p.or()?;
        p.blanks();
        if p.pos < p.s.len() {
            return Err(format!("unexpected '{}' in filter {text}", &p.s[p.pos..]));
        }
        Ok(Filter {
            expr,
            notes: p.notes,
        })
    }

    /// Where sfn-local reads the filter differently from Jayway (see the module docs).
    pub fn notes(&self) -> &[String] {
        &self.notes
    }

    /// Whether `item` (`@`) passes, with `root` as `$`.
    pub fn matches(&self, item: &Value, root: &Value) -> bool {
        eval(&self.expr, item, root)
    }
}

struct Parser<'s> {
    s: &'s str,
    pos: usize,
    notes: Vec<String>,
    /// Parentheses and negations open around the current operand: the parser and the evaluator
    /// recurse once per level, so a budget keeps both on the stack.
    depth: usize,
}

impl<'s> Parser<'s> {
    fn rest(&self) -> &'s str {
        &self.s[self.pos..]
    }

    fn blanks(&mut self) {
        let r = self.rest();
        self.pos += r.len() - r.trim_start().len();
    }

    fn eat(&mut self, token: &str) -> bool {
        self.blanks();
        if self.rest().starts_with(token) {
            self.pos += token.len();
            true
        } else {
            false
        }
    }

    fn or(&mut self) -> Result<Expr, String> {
        let mut ops = vec![self.and()?];
        while self.eat("||") {
            ops.push(self.and()?);
        }
        Ok(if ops.len() == 1 {
            ops.remove(0)
        } else {
            Expr::Or(ops)
        })
    }

    fn and(&mut self) -> Result<Expr, String> {
        let mut ops = vec![self.operand()?];
        while self.eat("&&") {
            ops.push(self.operand()?);
        }
        Ok(if ops.len() == 1 {
            ops.remove(0)
        } else {
            Expr::And(ops)
        })
    }

    fn operand(&mut self) -> Result<Expr, String> {
        self.blanks();
        let rest = self.rest();
        let negation = rest.starts_with('!') && !rest[1..].trim_start().starts_with(['@', '$']);
        if !negation && !rest.starts_with('(') {
            return self.relation();
        }
        if self.depth >= crate::depth::FILTER_DEPTH {
            return Err(format!(
                "parentheses and '!' nest more than {} deep (sfn-local's limit)",
                crate::depth::FILTER_DEPTH
            ));
        }
        self.depth += 1;
        self.pos += 1;
        let e = if negation {
            Expr::Not(Box::new(self.operand()?))
        } else {
            let e = self.or()?;
            if !self.eat(")") {
                return Err("unclosed '(' in filter".into());
            }
            e
        };
        self.depth -= 1;
        Ok(e)
    }

    fn relation(&mut self) -> Result<Expr, String> {
        self.blanks();
        let negated = self.rest().starts_with('!');
        if negated {
            self.pos += 1;
            self.blanks();
        }
        let left = self.value()?;
        let save = self.pos;
        if let Some(op) = self.operator() {
            if negated {
                return Err("'!' can only negate a path existence test".into());
            }
            let right = self.value()?;
            return Ok(Expr::Relation(left, op, right));
        }
        self.pos = save;
        match left {
            Operand::Path { path, relative } => Ok(Expr::Exists {
                path,
                relative,
                want: !negated,
            }),
            _ => Err("a filter needs a comparison, or a path to test for existence".into()),
        }
    }

    fn operator(&mut self) -> Option<Op> {
        self.blanks();
        let rest = self.rest();
        let symbolic: String = rest
            .chars()
            .take_while(|c| matches!(c, '=' | '!' | '<' | '>' | '~'))
            .collect();
        let word = if symbolic.is_empty() {
            rest.split(|c: char| c.is_whitespace()).next().unwrap_or("")
        } else {
            symbolic.as_str()
        };
        let op = Op::parse(word)?;
        self.pos += word.len();
        Some(op)
    }

    fn value(&mut self) -> Result<Operand, String> {
        self.blanks();
        let rest = self.rest();
        let first = rest.chars().next().ok_or("a filter ends too early")?;
        match first {
            '@' | '$' => {
                let len = path_len(rest);
                let text = &rest[..len];
                self.pos += len;
                let relative = first == '@';
                let as_root = if relative {
                    format!("${}", &text[1..])
                } else {
                    text.to_owned()
                };
                let path =
                    Path::parse(&as_root).map_err(|e| format!("in filter path '{text}': {e}"))?;
                Ok(Operand::Path {
                    path: Box::new(path),
                    relative,
                })
            }
            '\'' | '"' => {
                let mut out = String::new();
                let mut chars = rest.char_indices().skip(1);
                loop {
                    let Some((i, c)) = chars.next() else {
                        return Err(format!("unclosed string in filter: {rest}"));
                    };
                    match c {
                        '\\' => {
                            if let Some((_, n)) = chars.next() {
                                out.push(n);
                            }
                        }
                        c if c == first => {
                            self.pos += i + 1;
                            break;
                        }
                        c => out.push(c),
                    }
                }
                Ok(Operand::Literal(Value::String(out)))
            }
            '{' | '[' => {
                let mut stream = serde_json::Deserializer::from_str(rest).into_iter::<Value>();
                let v = stream
                    .next()
                    .and_then(Result::ok)
                    .or_else(|| json5ish(rest).map(|(v, _)| v))
                    .ok_or_else(|| format!("bad JSON literal in filter: {rest}"))?;
                let used = match json5ish(rest) {
                    Some((_, n)) => n,
                    None => stream.byte_offset(),
                };
                self.pos += used;
                Ok(Operand::Literal(v))
            }
            '/' => {
                let body_end = rest[1..]
                    .find('/')
                    .ok_or_else(|| format!("unclosed /regex/ in filter: {rest}"))?
                    + 1;
                let body = &rest[1..body_end];
                let flags: String = rest[body_end + 1..]
                    .chars()
                    .take_while(char::is_ascii_alphabetic)
                    .collect();
                self.pos += body_end + 1 + flags.len();
                let mut pattern = String::new();
                if flags.contains('i') {
                    pattern.push_str("(?i)");
                }
                pattern.push_str("^(?:");
                pattern.push_str(body);
                pattern.push_str(")$");
                let re = regex::Regex::new(&pattern)
                    .map_err(|e| format!("bad regex /{body}/ in filter: {e}"))?;
                Ok(Operand::Regex(re))
            }
            _ => {
                let word: String = rest
                    .chars()
                    .take_while(|c| {
                        !c.is_whitespace() && !matches!(c, ')' | '&' | '|' | '=' | '!' | '<' | '>')
                    })
                    .collect();
                if word.is_empty() {
                    return Err(format!("unexpected '{rest}' in filter"));
                }
                self.pos += word.len();
                match word.as_str() {
                    "true" => return Ok(Operand::Literal(Value::Bool(true))),
                    "false" => return Ok(Operand::Literal(Value::Bool(false))),
                    "null" => return Ok(Operand::Literal(Value::Null)),
                    _ => {}
                }
                if let Ok(n) = word.parse::<i64>() {
                    return Ok(Operand::Literal(Value::from(n)));
                }
                if let Some(n) = word
                    .parse::<f64>()
                    .ok()
                    .and_then(serde_json::Number::from_f64)
                {
                    return Ok(Operand::Literal(Value::Number(n)));
                }
                self.notes.push(format!(
                    "Jayway JsonPath (AWS's evaluator) reads the unquoted '{word}' as a number literal and cannot parse it; AWS accepts the definition, but what the filter does there is unknown. sfn-local compares with the string '{word}': quote it ('{word}') to say so"
                ));
                Ok(Operand::Literal(Value::String(word)))
            }
        }
    }
}

/// A JSON literal as Jayway allows it in filters: also with single-quoted strings
/// (`['a', 'b']`). Returns the value and the bytes used.
fn json5ish(s: &str) -> Option<(Value, usize)> {
    let open = s.chars().next()?;
    let close = if open == '[' { ']' } else { '}' };
    let mut depth = 0usize;
    let mut quote: Option<char> = None;
    let mut escaped = false;
    let mut end = None;
    for (i, c) in s.char_indices() {
        if let Some(q) = quote {
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == q {
                quote = None;
            }
            continue;
        }
        match c {
            '\'' | '"' => quote = Some(c),
            c if c == open => depth += 1,
            c if c == close => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    end = Some(i + 1);
                    break;
                }
            }
            _ => {}
        }
    }
    let end = end?;
    let raw = &s[..end];
    // Turn 'single' strings into "double" ones.
    let mut json = String::with_capacity(raw.len());
    let mut in_single = false;
    let mut in_double = false;
    let mut escaped = false;
    for c in raw.chars() {
        if escaped {
            if in_single && c == '\'' {
                json.push('\'');
            } else {
                json.push('\\');
                json.push(c);
            }
            escaped = false;
            continue;
        }
        match c {
            '\\' => escaped = true,
            '\'' if !in_double => {
                in_single = !in_single;
                json.push('"');
            }
            '"' if in_single => json.push_str("\\\""),
            '"' => {
                in_double = !in_double;
                json.push('"');
            }
            c => json.push(c),
        }
    }
    serde_json::from_str(&json).ok().map(|v| (v, end))
}

/// The length of a path inside a filter: up to an operator, a blank, or the `)` that is not
/// its own (brackets, quotes and function parentheses are skipped).
fn path_len(s: &str) -> usize {
    let mut depth_sq = 0usize;
    let mut depth_par = 0usize;
    let mut quoted = crate::asl::path::Quoted::default();
    for (i, c) in s.char_indices() {
        // Quotes are names only inside brackets (`@['it\'s']`); outside, a string literal.
        if quoted.take(c, depth_sq > 0) {
            continue;
        }
        match c {
            '[' => depth_sq += 1,
            ']' => depth_sq = depth_sq.saturating_sub(1),
            '(' if depth_sq == 0 => depth_par += 1,
            ')' if depth_sq == 0 => {
                if depth_par == 0 {
                    return i;
                }
                depth_par -= 1;
            }
            c if depth_sq == 0
                && (c.is_whitespace() || matches!(c, '=' | '!' | '<' | '>' | '~' | '&' | '|')) =>
            {
                return i;
            }
            _ => {}
        }
    }
    s.len()
}

/// A value in a filter: Jayway's undefined (a path that found nothing) is `None`.
fn operand_value(op: &Operand, item: &Value, root: &Value) -> Option<Value> {
    match op {
        Operand::Literal(v) => Some(v.clone()),
        Operand::Regex(_) => None,
        Operand::Path { path, relative } => {
            let start = if *relative { item } else { root };
            path.select_from(start, root)
        }
    }
}

fn eval(expr: &Expr, item: &Value, root: &Value) -> bool {
    match expr {
        Expr::Or(ops) => ops.iter().any(|e| eval(e, item, root)),
        Expr::And(ops) => ops.iter().all(|e| eval(e, item, root)),
        Expr::Not(e) => !eval(e, item, root),
        Expr::Exists {
            path,
            relative,
            want,
        } => {
            let start = if *relative { item } else { root };
            let found = match path.select_from(start, root) {
                None => false,
                // An indefinite path "exists" when it found something.
                Some(Value::Array(a)) if !path.is_definite() => !a.is_empty(),
                Some(_) => true,
            };
            found == *want
        }
        Expr::Relation(left, op, right) => {
            if let (Op::Regex, Operand::Regex(re)) = (op, right) {
                return match operand_value(left, item, root) {
                    Some(Value::String(s)) => re.is_match(&s),
                    Some(v @ (Value::Number(_) | Value::Bool(_))) => re.is_match(&v.to_string()),
                    _ => false,
                };
            }
            let l = operand_value(left, item, root);
            let r = operand_value(right, item, root);
            relation(l.as_ref(), *op, r.as_ref())
        }
    }
}

fn relation(l: Option<&Value>, op: Op, r: Option<&Value>) -> bool {
    match op {
        Op::Ne => !equals(l, r),
        Op::Eq => equals(l, r),
        Op::Lt | Op::Le | Op::Gt | Op::Ge => {
            let Some(ord) = l.zip(r).and_then(|(l, r)| compare(l, r)) else {
                return false;
            };
            match op {
                Op::Lt => ord == Ordering::Less,
                Op::Le => ord != Ordering::Greater,
                Op::Gt => ord == Ordering::Greater,
                _ => ord != Ordering::Less,
            }
        }
        Op::Regex => false,
        Op::In | Op::Nin => {
            let found = match r {
                Some(Value::Array(items)) => items.iter().any(|i| equals(l, Some(i))),
                _ => false,
            };
            found == (op == Op::In)
        }
        Op::SubsetOf | Op::AnyOf | Op::NoneOf => {
            let (Some(Value::Array(left)), Some(Value::Array(right))) = (l, r) else {
                return false;
            };
            let contains = |v: &Value| right.iter().any(|x| equals(Some(v), Some(x)));
            match op {
                Op::SubsetOf => left.iter().all(contains),
                Op::AnyOf => left.iter().any(contains),
                _ => !left.iter().any(contains),
            }
        }
        Op::Size => {
            let want = r.and_then(Value::as_f64);
            let len = match l {
                Some(Value::String(s)) => s.chars().count(),
                Some(Value::Array(a)) => a.len(),
                _ => return false,
            };
            want == Some(len as f64)
        }
        Op::Empty => {
            let empty = match l {
                Some(Value::String(s)) => s.is_empty(),
                Some(Value::Array(a)) => a.is_empty(),
                _ => return false,
            };
            r.and_then(Value::as_bool) == Some(empty)
        }
        Op::Contains => match (l, r) {
            (Some(Value::String(s)), Some(Value::String(t))) => s.contains(t.as_str()),
            (Some(Value::Array(items)), Some(v)) => items.iter().any(|i| equals(Some(i), Some(v))),
            _ => false,
        },
    }
}

/// Jayway's `==`: numbers by value, a number and a string by text, containers structurally;
/// undefined equals nothing.
fn equals(l: Option<&Value>, r: Option<&Value>) -> bool {
    let (Some(l), Some(r)) = (l, r) else {
        return false;
    };
    match (l, r) {
        (Value::Number(a), Value::Number(b)) => a.as_f64() == b.as_f64(),
        (Value::Number(n), Value::String(s)) | (Value::String(s), Value::Number(n)) => {
            s.parse::<f64>().ok() == n.as_f64()
        }
        _ => l == r,
    }
}

/// Jayway's ordering: two numbers, or two strings; anything else is not ordered.
fn compare(l: &Value, r: &Value) -> Option<Ordering> {
    match (l, r) {
        (Value::Number(a), Value::Number(b)) => a.as_f64()?.partial_cmp(&b.as_f64()?),
        (Value::String(a), Value::String(b)) => Some(a.cmp(b)),
        _ => None,
    }
}
