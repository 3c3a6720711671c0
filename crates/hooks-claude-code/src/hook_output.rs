//! What a command hook may print on stdout for Claude Code to act on.
//!
//! Claude Code reads a hook's stdout as one JSON object when it is one. `systemMessage` is
//! shown to the person in the TUI (both tested releases) and changes nothing else: the
//! model does not see it and the turn is not continued.

/// The hook output that shows `text` to the person, as one line of JSON.
pub fn system_message(text: &str) -> String {
    serde_json::json!({ "systemMessage": text }).to_string()
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_message_is_one_json_object_with_the_text_as_is() {
        let out = super::system_message("post-task in 10s \"quoted\"\nnext");
        assert!(!out.contains('\n'));
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["systemMessage"], "post-task in 10s \"quoted\"\nnext");
        assert_eq!(v.as_object().unwrap().len(), 1);
    }
}
