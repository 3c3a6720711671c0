//! Edits of a JSON text that keep every byte they need not change: the user's indentation,
//! line endings, spacing, key order, escapes and final newline.
//!
//! The text is first checked by `serde_json` (so errors keep its line and column); this
//! module then finds where each object member and array item sits, and an edit inserts or
//! removes one whole member or item. An insertion copies the separator its neighbours use
//! and is laid out in the file's own style, so removing what was inserted gives back the
//! text as it was, byte for byte.

use serde_json::Value;

/// A JSON value and where it sits in the text (`start..end`, in bytes).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Node {
    pub start: usize,
    pub end: usize,
    pub kind: Kind,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kind {
    Object(Vec<Member>),
    Array(Vec<Node>),
    Scalar,
}

/// An object member: its key, decoded, from where its key starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    pub key: String,
    pub start: usize,
    pub value: Node,
}

impl Node {
    pub fn member(&self, key: &str) -> Option<&Node> {
        match &self.kind {
            Kind::Object(ms) => ms.iter().find(|m| m.key == key).map(|m| &m.value),
            _ => None,
        }
    }
    pub fn items(&self) -> &[Node] {
        match &self.kind {
            Kind::Array(items) => items,
            _ => &[],
        }
    }
    pub fn members(&self) -> &[Member] {
        match &self.kind {
            Kind::Object(ms) => ms,
            _ => &[],
        }
    }
    /// Whether it is an object or array with nothing in it.
    pub fn is_empty_container(&self) -> bool {
        match &self.kind {
            Kind::Object(ms) => ms.is_empty(),
            Kind::Array(items) => items.is_empty(),
            Kind::Scalar => false,
        }
    }
}

/// Where the values of a text known to be valid JSON sit. `None` if it is not valid JSON
/// after all (callers check with `serde_json` first, for its error position).
pub fn parse(text: &str) -> Option<Node> {
    let b = text.as_bytes();
    let mut p = Parser { b, i: 0 };
    p.ws();
    let v = p.value(0)?;
    p.ws();
    (p.i == b.len()).then_some(v)
}

struct Parser<'a> {
    b: &'a [u8],
    i: usize,
}

/// Deeper than this is refused rather than risk the stack (settings files are shallow).
const MAX_DEPTH: usize = 128;

impl Parser<'_> {
    fn ws(&mut self) {
        while self
            .b
            .get(self.i)
            .is_some_and(|c| matches!(c, b' ' | b'\t' | b'\n' | b'\r'))
        {
            self.i += 1;
        }
    }
    fn eat(&mut self, c: u8) -> Option<()> {
        (self.b.get(self.i) == Some(&c)).then(|| self.i += 1)
    }
    fn value(&mut self, depth: usize) -> Option<Node> {
        if depth > MAX_DEPTH {
            return None;
        }
        let start = self.i;
        let kind = match self.b.get(self.i)? {
            b'{' => {
                self.i += 1;
                let mut ms = Vec::new();
                self.ws();
                if self.eat(b'}').is_none() {
                    loop {
                        self.ws();
                        let key_start = self.i;
                        self.string()?;
                        let key: String =
                            serde_json::from_slice(&self.b[key_start..self.i]).ok()?;
                        self.ws();
                        self.eat(b':')?;
                        self.ws();
                        let value = self.value(depth + 1)?;
                        ms.push(Member {
                            key,
                            start: key_start,
                            value,
                        });
                        self.ws();
                        if self.eat(b',').is_none() {
                            self.eat(b'}')?;
                            break;
                        }
                    }
                }
                Kind::Object(ms)
            }
            b'[' => {
                self.i += 1;
                let mut items = Vec::new();
                self.ws();
                if self.eat(b']').is_none() {
                    loop {
                        self.ws();
                        items.push(self.value(depth + 1)?);
                        self.ws();
                        if self.eat(b',').is_none() {
                            self.eat(b']')?;
                            break;
                        }
                    }
                }
                Kind::Array(items)
            }
            b'"' => {
                self.string()?;
                Kind::Scalar
            }
            _ => {
                while self.b.get(self.i).is_some_and(|c| {
                    !matches!(c, b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r')
                }) {
                    self.i += 1;
                }
                if self.i == start {
                    return None;
                }
                Kind::Scalar
            }
        };
        Some(Node {
            start,
            end: self.i,
            kind,
        })
    }
    fn string(&mut self) -> Option<()> {
        self.eat(b'"')?;
        loop {
            match self.b.get(self.i)? {
                b'"' => {
                    self.i += 1;
                    return Some(());
                }
                b'\\' => self.i += 2,
                _ => self.i += 1,
            }
        }
    }
}

/// How a file lays out its JSON: line ending (empty when all on one line), one level of
/// indentation, and what sits between a key and its value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Style {
    pub newline: String,
    pub unit: String,
    pub colon: String,
}

impl Default for Style {
    /// What a new file gets: two spaces, LF, `": "`.
    fn default() -> Self {
        Self {
            newline: "\n".into(),
            unit: "  ".into(),
            colon: ": ".into(),
        }
    }
}

/// The style of `text`, learnt from its first nested member or item; the default where the
/// text does not show it.
pub fn style_of(text: &str, root: &Node) -> Style {
    let mut st = Style::default();
    let inner = &text[root.start..root.end];
    if !inner.contains('\n') && (root.members().len() + root.items().len()) > 0 {
        st.newline.clear();
        st.unit.clear();
    } else if text.contains("\r\n") {
        st.newline = "\r\n".into();
    }
    if let Some(m) = first_member(root) {
        let key_end = m.start + key_len(text, m.start);
        st.colon = text[key_end..m.value.start].to_owned();
    }
    let first = root
        .members()
        .first()
        .map(|m| m.start)
        .or_else(|| root.items().first().map(|n| n.start));
    if let Some(at) = first {
        let ind = line_indent(text, at);
        if !ind.is_empty() && !st.newline.is_empty() {
            st.unit = ind.to_owned();
        }
    }
    st
}

fn first_member(n: &Node) -> Option<&Member> {
    match &n.kind {
        Kind::Object(ms) => ms
            .first()
            .or_else(|| ms.iter().find_map(|m| first_member(&m.value))),
        Kind::Array(items) => items.iter().find_map(first_member),
        Kind::Scalar => None,
    }
}

fn key_len(text: &str, start: usize) -> usize {
    let mut p = Parser {
        b: text.as_bytes(),
        i: start,
    };
    p.string().map_or(0, |()| p.i - start)
}

/// The indentation of the line `at` is on: its leading spaces and tabs.
fn line_indent(text: &str, at: usize) -> &str {
    let line_start = text[..at].rfind('\n').map_or(0, |i| i + 1);
    let line = &text[line_start..];
    let n = line
        .bytes()
        .take_while(|c| *c == b' ' || *c == b'\t')
        .count();
    &line[..n]
}

/// `v` laid out in `st`, its nested lines indented from `indent`.
pub fn render(v: &Value, indent: &str, st: &Style) -> String {
    let inner = format!("{indent}{}", st.unit);
    let (open, close, parts): (char, char, Vec<String>) = match v {
        Value::Object(m) if !m.is_empty() => (
            '{',
            '}',
            m.iter()
                .map(|(k, v)| format!("{}{}{}", quote(k), st.colon, render(v, &inner, st)))
                .collect(),
        ),
        Value::Array(a) if !a.is_empty() => {
            ('[', ']', a.iter().map(|v| render(v, &inner, st)).collect())
        }
        _ => return serde_json::to_string(v).unwrap_or_default(),
    };
    let nl = &st.newline;
    let sep = format!(",{nl}{}", if nl.is_empty() { "" } else { &inner });
    let lead = if nl.is_empty() {
        String::new()
    } else {
        format!("{nl}{inner}")
    };
    let trail = if nl.is_empty() {
        String::new()
    } else {
        format!("{nl}{indent}")
    };
    format!("{open}{lead}{}{trail}{close}", parts.join(&sep))
}

fn quote(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_default()
}

/// Puts `piece` (an item, or `"key": value`) last in `container`, laid out like its
/// neighbours. `render_at` lays the piece out for the indentation it is given.
fn append(
    text: &str,
    container: &Node,
    starts: &[usize],
    ends: &[usize],
    st: &Style,
    render_at: impl Fn(&str) -> String,
) -> String {
    let mut out = String::with_capacity(text.len() + 256);
    if let (Some(&last_start), Some(&last_end)) = (starts.last(), ends.last()) {
        let sep = if starts.len() >= 2 {
            text[ends[ends.len() - 2]..last_start].to_owned()
        } else {
            format!(",{}", &text[container.start + 1..last_start])
        };
        let indent = line_indent(text, last_start);
        out.push_str(&text[..last_end]);
        out.push_str(&sep);
        out.push_str(&render_at(indent));
        out.push_str(&text[last_end..]);
    } else {
        let outer = line_indent(text, container.start);
        let inner = format!("{outer}{}", st.unit);
        out.push_str(&text[..=container.start]);
        if st.newline.is_empty() {
            out.push_str(&render_at(""));
        } else {
            out.push_str(&st.newline);
            out.push_str(&inner);
            out.push_str(&render_at(&inner));
            out.push_str(&st.newline);
            out.push_str(outer);
        }
        out.push_str(&text[container.end - 1..]);
    }
    out
}

/// `text` with `value` added as the last item of the array `arr`.
pub fn push_item(text: &str, arr: &Node, value: &Value, st: &Style) -> String {
    let starts: Vec<usize> = arr.items().iter().map(|n| n.start).collect();
    let ends: Vec<usize> = arr.items().iter().map(|n| n.end).collect();
    append(text, arr, &starts, &ends, st, |ind| render(value, ind, st))
}

/// `text` with `"key": value` added as the last member of the object `obj`.
pub fn push_member(text: &str, obj: &Node, key: &str, value: &Value, st: &Style) -> String {
    let starts: Vec<usize> = obj.members().iter().map(|m| m.start).collect();
    let ends: Vec<usize> = obj.members().iter().map(|m| m.value.end).collect();
    append(text, obj, &starts, &ends, st, |ind| {
        format!("{}{}{}", quote(key), st.colon, render(value, ind, st))
    })
}

/// Cuts piece `i` of `n` (spanning `starts[i]..ends[i]`) out of `container`, with the comma
/// and spacing that joined it to its neighbours; an emptied container becomes `{}` / `[]`.
fn cut(text: &str, container: &Node, starts: &[usize], ends: &[usize], i: usize) -> String {
    let (from, to) = if starts.len() == 1 {
        (container.start + 1, container.end - 1)
    } else if i > 0 {
        (ends[i - 1], ends[i])
    } else {
        (starts[0], starts[1])
    };
    format!("{}{}", &text[..from], &text[to..])
}

/// What sits between the brackets of a container (its whitespace, when it is empty).
pub fn inner<'t>(text: &'t str, node: &Node) -> &'t str {
    &text[node.start + 1..node.end - 1]
}

/// `text` with what sits between the brackets of `node` replaced by `inner`.
pub fn set_inner(text: &str, node: &Node, inner: &str) -> String {
    format!("{}{inner}{}", &text[..=node.start], &text[node.end - 1..])
}

/// `text` without item `i` of the array `arr`.
pub fn remove_item(text: &str, arr: &Node, i: usize) -> String {
    let starts: Vec<usize> = arr.items().iter().map(|n| n.start).collect();
    let ends: Vec<usize> = arr.items().iter().map(|n| n.end).collect();
    cut(text, arr, &starts, &ends, i)
}

/// `text` without the member `key` of the object `obj` (unchanged if it has none).
pub fn remove_member(text: &str, obj: &Node, key: &str) -> String {
    let ms = obj.members();
    let Some(i) = ms.iter().position(|m| m.key == key) else {
        return text.to_owned();
    };
    let starts: Vec<usize> = ms.iter().map(|m| m.start).collect();
    let ends: Vec<usize> = ms.iter().map(|m| m.value.end).collect();
    cut(text, obj, &starts, &ends, i)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn group() -> Value {
        json!({"hooks": [{"type": "command", "command": "x claude-hook", "timeout": 30}]})
    }

    /// Adds the group under hooks.Stop (creating what is missing), checks the result is
    /// the same JSON plus the group, then removes it all and expects the input back.
    fn round_trip(text: &str) -> String {
        let root = parse(text).expect("parses");
        let st = style_of(text, &root);
        let (added, created) = match root.member("hooks") {
            None => (
                push_member(text, &root, "hooks", &json!({"Stop": [group()]}), &st),
                "hooks",
            ),
            Some(h) => match h.member("Stop") {
                None => (push_member(text, h, "Stop", &json!([group()]), &st), "Stop"),
                Some(arr) => (push_item(text, arr, &group(), &st), ""),
            },
        };
        let mut want: Value = serde_json::from_str(text).unwrap();
        let stop = want
            .as_object_mut()
            .unwrap()
            .entry("hooks")
            .or_insert(json!({}))
            .as_object_mut()
            .unwrap()
            .entry("Stop")
            .or_insert(json!([]));
        stop.as_array_mut().unwrap().push(group());
        let got: Value = serde_json::from_str(&added).unwrap_or_else(|e| panic!("{e}: {added}"));
        assert_eq!(got, want, "{added}");

        let root2 = parse(&added).unwrap();
        let back = match created {
            "hooks" => remove_member(&added, &root2, "hooks"),
            "Stop" => remove_member(&added, root2.member("hooks").unwrap(), "Stop"),
            _ => {
                let arr = root2.member("hooks").unwrap().member("Stop").unwrap();
                remove_item(&added, arr, arr.items().len() - 1)
            }
        };
        assert_eq!(back, text, "round trip of {text:?} via {added:?}");
        added
    }

    #[test]
    fn insertions_follow_the_file_and_removals_give_it_back() {
        for text in [
            "{}",
            "{}\n",
            "{\"a\": 1}",
            "{\n  \"a\": 1\n}\n",
            "{\n    \"a\": 1,\n    \"b\": [1, 2]\n}",
            "{\r\n\t\"a\": 1\r\n}\r\n",
            "{\"a\":1,\"hooks\":{\"Stop\":[{\"hooks\":[]}]}}",
            "{\n  \"hooks\": {}\n}\n",
            "{\n  \"hooks\": {\n    \"Stop\": []\n  }\n}\n",
            "{\n  \"hooks\": {\n    \"PreToolUse\": [\n      {\"matcher\": \"Bash\", \"hooks\": []}\n    ]\n  }\n}",
            "{ \"x\" : \"\\u00e9\\\"\\\\\" , \"hooks\" : { \"Stop\" : [ { } , { } ] } }",
        ] {
            round_trip(text);
        }
    }

    #[test]
    fn an_insertion_is_laid_out_like_its_neighbours() {
        let added = round_trip("{\r\n\t\"a\": 1\r\n}\r\n");
        assert!(
            added.contains("\r\n\t\"hooks\": {\r\n\t\t\"Stop\": [\r\n\t\t\t{"),
            "{added:?}"
        );
        assert!(!added.replace("\r\n", "").contains('\n'));
        let added = round_trip("{\"a\":1}");
        assert!(
            !added.contains('\n') && added.contains("\"hooks\":{\"Stop\":[{"),
            "{added}"
        );
        let added = round_trip("{\n    \"a\": 1\n}");
        assert!(
            added.contains("\n    \"hooks\": {\n        \"Stop\""),
            "{added}"
        );
    }

    #[test]
    fn keys_are_decoded_and_strings_with_brackets_are_skipped() {
        let t = r#"{"a\"}": "]}", "b": [ "[", {"c": "\\"} ]}"#;
        let n = parse(t).unwrap();
        assert_eq!(n.members()[0].key, "a\"}");
        assert_eq!(n.member("b").unwrap().items().len(), 2);
        assert_eq!(parse("{\"a\": }"), None);
        assert_eq!(parse("[1] x"), None);
    }
}
