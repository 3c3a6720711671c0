//! A validating scan of the store file for the enqueue path, the one `claude-hook` takes.
//!
//! It checks that the whole text is JSON, as strictly as `serde_json` does, but keeps only
//! what an enqueue needs: where each pending entry lies, and each hook's fields other than
//! its history (85 % of a large file's bytes: a string-heavy object that is skipped with
//! `memchr`, never decoded). Anything out of the ordinary — an escaped key, a repeated
//! `hooks` or `pending`, a repeated hook id, a surrogate escape, nesting deeper than
//! `serde_json` allows — makes it give up: the caller then takes the full parse, which
//! decides and gives the precise error. So a text this accepts is one `serde_json` accepts,
//! and the enqueue never writes over a file that does not parse.

use std::ops::Range;

/// What the enqueue path reads from the store file. Every piece is a slice of the text.
#[derive(Debug)]
pub struct Layout<'a> {
    /// The whole text, checked as UTF-8.
    pub text: &'a str,
    /// Each hook's id (unquoted: an id with an escape makes the scan give up) and its fields other than `history`, each as `(key, value)` where the
    /// key is the quoted key as written and the value is its JSON text.
    pub hooks: Vec<(&'a str, Vec<(&'a str, &'a str)>)>,
    /// The pending entries, in file order.
    pub pending: Vec<Piece<'a>>,
}

/// One pending entry.
#[derive(Debug)]
pub struct Piece<'a> {
    /// Where its JSON text lies.
    pub range: Range<usize>,
    /// Its `sessionId`, where the entry is an object with one, a string without escapes;
    /// otherwise the entry is left to `serde_json` to judge.
    pub session: Option<&'a str>,
}

/// Where the first `"`, `\\` or control character at or after `i` is (`b.len()` if none),
/// eight bytes at a time. In each word, a byte is flagged when it equals `"` or `\\` (its
/// xor with them is zero) or is below 0x20; a flag can be wrong only above a right one,
/// where a borrow carries, so the lowest flag is exact.
fn next_special(b: &[u8], mut i: usize) -> usize {
    const LO: u64 = u64::from_ne_bytes([1; 8]);
    const HI: u64 = LO * 0x80;
    while let Some(chunk) = b.get(i..i + 8) {
        let mut word = [0; 8];
        word.copy_from_slice(chunk);
        let w = u64::from_le_bytes(word);
        let q = w ^ (LO * u64::from(b'"'));
        let e = w ^ (LO * u64::from(b'\\'));
        let hit =
            (q.wrapping_sub(LO) & !q | e.wrapping_sub(LO) & !e | w.wrapping_sub(LO * 0x20) & !w)
                & HI;
        if hit != 0 {
            return i + (hit.trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    while b
        .get(i)
        .is_some_and(|&c| c != b'"' && c != b'\\' && c >= 0x20)
    {
        i += 1;
    }
    i
}

/// `serde_json`'s nesting limit.
const MAX_DEPTH: usize = 128;

struct Scanner<'a> {
    text: &'a str,
    b: &'a [u8],
    pos: usize,
}

/// Scans `text`; `None` when the text is not JSON (or not UTF-8) or is unusual in a way
/// listed above.
pub fn layout(text: &[u8]) -> Option<Layout<'_>> {
    let text = std::str::from_utf8(text).ok()?;
    let mut s = Scanner {
        text,
        b: text.as_bytes(),
        pos: 0,
    };
    let mut out = Layout {
        text,
        hooks: Vec::new(),
        pending: Vec::new(),
    };
    let (mut seen_hooks, mut seen_pending) = (false, false);
    s.ws();
    s.eat(b'{')?;
    s.members(|s, key| match key {
        "\"hooks\"" if !seen_hooks => {
            seen_hooks = true;
            s.hooks(text, &mut out.hooks)
        }
        "\"pending\"" if !seen_pending => {
            seen_pending = true;
            s.entries(&mut out.pending)
        }
        "\"hooks\"" | "\"pending\"" => None,
        _ => s.value(1),
    })?;
    s.ws();
    (s.pos == s.b.len()).then_some(out)
}

impl<'a> Scanner<'a> {
    fn ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.b.get(self.pos) {
            self.pos += 1;
        }
    }

    fn peek(&self) -> Option<u8> {
        self.b.get(self.pos).copied()
    }

    fn eat(&mut self, c: u8) -> Option<()> {
        (self.peek()? == c).then(|| self.pos += 1)
    }

    /// The members of an object whose `{` was just read: `f` gets each key as written
    /// (quotes included) with the scanner on the value, and reads the value.
    fn members(&mut self, mut f: impl FnMut(&mut Self, &'a str) -> Option<()>) -> Option<()> {
        self.ws();
        if self.eat(b'}').is_some() {
            return Some(());
        }
        loop {
            self.ws();
            let key = self.string()?;
            self.ws();
            self.eat(b':')?;
            self.ws();
            f(self, key)?;
            if self.closed(b'}')? {
                return Some(());
            }
        }
    }

    /// After an item of a container: `Some(false)` past a comma, `Some(true)` past the
    /// container's end `close`, `None` on anything else.
    fn closed(&mut self, close: u8) -> Option<bool> {
        self.ws();
        let c = self.peek()?;
        self.pos += 1;
        match c {
            b',' => Some(false),
            c if c == close => Some(true),
            _ => None,
        }
    }

    /// A string, returned as written with its quotes. Keys with escapes are not wanted by
    /// any caller that compares them, so they are returned as they are too.
    fn string(&mut self) -> Option<&'a str> {
        let start = self.pos;
        self.eat(b'"')?;
        loop {
            self.pos = next_special(self.b, self.pos);
            match self.peek()? {
                b'"' => {
                    self.pos += 1;
                    // Cut at ASCII quotes, so on character boundaries.
                    return self.text.get(start..self.pos);
                }
                b'\\' => self.pos += 1,
                _ => return None,
            }
            match self.peek()? {
                b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => self.pos += 1,
                b'u' => {
                    let hex = self.b.get(self.pos + 1..self.pos + 5)?;
                    let hex = std::str::from_utf8(hex).ok()?;
                    let code = u16::from_str_radix(hex, 16).ok()?;
                    if hex.starts_with('+') || (0xD800..=0xDFFF).contains(&code) {
                        return None;
                    }
                    self.pos += 5;
                }
                _ => return None,
            }
        }
    }

    fn digits(&mut self) -> usize {
        let start = self.pos;
        while self.peek().is_some_and(|c| c.is_ascii_digit()) {
            self.pos += 1;
        }
        self.pos - start
    }

    fn number(&mut self) -> Option<()> {
        let _ = self.eat(b'-');
        match self.peek()? {
            b'0' => self.pos += 1,
            b'1'..=b'9' => {
                self.digits();
            }
            _ => return None,
        }
        if self.eat(b'.').is_some() && self.digits() == 0 {
            return None;
        }
        if let Some(b'e' | b'E') = self.peek() {
            self.pos += 1;
            if let Some(b'+' | b'-') = self.peek() {
                self.pos += 1;
            }
            if self.digits() == 0 {
                return None;
            }
        }
        Some(())
    }

    /// Any value, checked and skipped, in a loop rather than by recursion; `depth` counts
    /// the containers it is in already.
    fn value(&mut self, depth: usize) -> Option<()> {
        // The containers this value opened, innermost in the lowest bit: 1 for an object.
        let room = (MAX_DEPTH - 1).checked_sub(depth)?;
        let (mut open, mut n) = (0u128, 0usize);
        loop {
            self.ws();
            match self.peek()? {
                b'"' => {
                    self.string()?;
                }
                c @ (b'{' | b'[') => {
                    let object = c == b'{';
                    self.pos += 1;
                    self.ws();
                    if self.eat(if object { b'}' } else { b']' }).is_none() {
                        if n == room {
                            return None;
                        }
                        open = open << 1 | u128::from(object);
                        n += 1;
                        if object {
                            self.key()?;
                        }
                        continue;
                    }
                }
                b't' => self.literal(b"true")?,
                b'f' => self.literal(b"false")?,
                b'n' => self.literal(b"null")?,
                _ => self.number()?,
            }
            // After a value: a separator, or the ends of containers.
            loop {
                if n == 0 {
                    return Some(());
                }
                self.ws();
                let object = open & 1 == 1;
                match self.peek()? {
                    b',' => {
                        self.pos += 1;
                        if object {
                            self.ws();
                            self.key()?;
                        }
                        break;
                    }
                    b'}' if object => {}
                    b']' if !object => {}
                    _ => return None,
                }
                self.pos += 1;
                open >>= 1;
                n -= 1;
            }
        }
    }

    /// A member's key and its colon.
    fn key(&mut self) -> Option<()> {
        self.string()?;
        self.ws();
        self.eat(b':')
    }

    fn literal(&mut self, word: &[u8]) -> Option<()> {
        self.b[self.pos..]
            .starts_with(word)
            .then(|| self.pos += word.len())
    }

    /// The elements of an array whose `[` was just read.
    fn elements(&mut self, mut f: impl FnMut(&mut Self) -> Option<()>) -> Option<()> {
        self.ws();
        if self.eat(b']').is_some() {
            return Some(());
        }
        loop {
            self.ws();
            f(self)?;
            if self.closed(b']')? {
                return Some(());
            }
        }
    }

    /// `"hooks"`: an object of hook objects.
    fn hooks(
        &mut self,
        text: &'a str,
        out: &mut Vec<(&'a str, Vec<(&'a str, &'a str)>)>,
    ) -> Option<()> {
        if self.literal(b"null").is_some() {
            return Some(());
        }
        self.eat(b'{')?;
        self.members(|s, id| {
            // A hook id with an escape, or twice: the full parse decides.
            if id.contains('\\') || out.iter().any(|(k, _)| *k == &id[1..id.len() - 1]) {
                return None;
            }
            let mut fields = Vec::new();
            s.eat(b'{')?;
            s.members(|s, key| {
                let start = s.pos;
                s.value(3)?;
                if key != "\"history\"" {
                    fields.push((key, &text[start..s.pos]));
                }
                Some(())
            })?;
            out.push((&id[1..id.len() - 1], fields));
            Some(())
        })
    }

    /// `"pending"`: an array; where each element lies, and its session.
    fn entries(&mut self, out: &mut Vec<Piece<'a>>) -> Option<()> {
        if self.literal(b"null").is_some() {
            return Some(());
        }
        self.eat(b'[')?;
        self.elements(|s| {
            let start = s.pos;
            let mut session = None;
            if s.eat(b'{').is_some() {
                let mut seen = 0;
                s.members(|s, key| {
                    if key == "\"sessionId\"" {
                        seen += 1;
                        session = s.string_value()?;
                        Some(())
                    } else {
                        s.value(3)
                    }
                })?;
                if seen != 1 {
                    session = None;
                }
            } else {
                s.value(2)?;
            }
            out.push(Piece {
                range: start..s.pos,
                session,
            });
            Some(())
        })
    }

    /// A value that may be a string: `Some(Some(text))` for a string without escapes
    /// (unquoted), `Some(None)` for any other valid value.
    fn string_value(&mut self) -> Option<Option<&'a str>> {
        if self.peek()? != b'"' {
            return self.value(3).map(|()| None);
        }
        let s = self.string()?;
        Some((!s.contains('\\')).then(|| &s[1..s.len() - 1]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every text here is judged by the scan and by `serde_json`; the scan may refuse more
    /// (the full parse then decides) but must never accept what `serde_json` refuses.
    #[test]
    fn accepts_only_what_serde_json_accepts() {
        let cases: &[(&str, bool)] = &[
            (r#"{"hooks":{},"pending":[]}"#, true),
            (" {\n\t\"hooks\" : { } , \"pending\" : [ ] }\r\n", true),
            (
                r#"{"hooks":{"a":{"enabled":true,"history":{"x":"y"}}},"pending":[{"a":1}]}"#,
                true,
            ),
            (
                r#"{"pending":[1,-2.5e+3,0.1,true,false,null,"é\u00e9\n",[{}]],"other":{"k":[]}}"#,
                true,
            ),
            (r#"{"hooks":null,"pending":null}"#, true),
            (r#"{}"#, true),
            // Refused by both.
            (r#"{"hooks":{},"pending":[],}"#, false),
            (r#"{"hooks":{}"pending":[]}"#, false),
            (r#"{"pending":[01]}"#, false),
            (r#"{"pending":[1.]}"#, false),
            (r#"{"pending":[1e]}"#, false),
            (r#"{"pending":[-]}"#, false),
            (r#"{"pending":[tru]}"#, false),
            (r#"{"pending":["a\qb"]}"#, false),
            (r#"{"pending":["\u12G4"]}"#, false),
            ("{\"pending\":[\"a\tb\"]}", false),
            (r#"{"pending":["abc]}"#, false),
            (r#"{"pending":[1 2]}"#, false),
            (r#"{"hooks":{"a":{"history":{"x":}}}}"#, false),
            (r#"{"hooks":{}} x"#, false),
            (
                r#"// comment
{"hooks":{}}"#,
                false,
            ),
            (r#"{'hooks':{}}"#, false),
            ("", false),
        ];
        for (text, valid) in cases {
            assert_eq!(
                serde_json::from_str::<serde_json::Value>(text).is_ok(),
                *valid,
                "serde_json on {text:?}"
            );
            assert_eq!(
                layout(text.as_bytes()).is_some(),
                *valid,
                "scan on {text:?}"
            );
        }
        assert!(layout(b"{\"pending\":[\"\xff\"]}").is_none(), "not UTF-8");
    }

    #[test]
    fn gives_up_where_the_full_parse_must_decide() {
        for text in [
            r#"{"hooks":{},"hooks":{}}"#,
            r#"{"pending":[],"pending":[]}"#,
            r#"{"hooks":{"a":{},"a":{}}}"#,
            r#"{"hooks":{"\u0061":{}}}"#,
            r#"{"pending":["\ud800"]}"#,
            r#"{"hooks":[]}"#,
            r#"{"hooks":{"a":[]}}"#,
            r#"{"pending":{}}"#,
        ] {
            assert!(layout(text.as_bytes()).is_none(), "{text}");
        }
        let deep = format!("{{\"x\":{}{}}}", "[".repeat(200), "]".repeat(200));
        assert!(layout(deep.as_bytes()).is_none());
        let fine = format!("{{\"x\":{}{}}}", "[".repeat(100), "]".repeat(100));
        assert!(layout(fine.as_bytes()).is_some());
    }

    #[test]
    fn finds_the_entries_and_the_fields_other_than_history() {
        let text = r#"{ "version": 2,
  "hooks": { "a": { "enabled": true, "history": { "t": "r" }, "delaySeconds": 10 },
             "b": {} },
  "pending": [ {"hookId":"a","sessionId":"s1"} ,
    {"hookId":"b","x":[1,{"y":"]"}],"sessionId":"s\u0032"},
    {"sessionId":"s3","sessionId":"s4"},{"sessionId":3},[] ] }"#;
        let l = layout(text.as_bytes()).expect("valid");
        assert_eq!(
            l.hooks,
            vec![
                (
                    "a",
                    vec![("\"enabled\"", "true"), ("\"delaySeconds\"", "10")]
                ),
                ("b", vec![])
            ]
        );
        let pieces: Vec<(&str, Option<&str>)> = l
            .pending
            .iter()
            .map(|p| (&text[p.range.clone()], p.session))
            .collect();
        assert_eq!(
            pieces,
            [
                (r#"{"hookId":"a","sessionId":"s1"}"#, Some("s1")),
                (
                    r#"{"hookId":"b","x":[1,{"y":"]"}],"sessionId":"s\u0032"}"#,
                    None
                ),
                (r#"{"sessionId":"s3","sessionId":"s4"}"#, None),
                (r#"{"sessionId":3}"#, None),
                ("[]", None),
            ]
        );
    }
}
