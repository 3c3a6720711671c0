//! A one-request HTTP server on 127.0.0.1: it records the request it gets and gives a
//! canned answer, or holds the connection without answering. For testing HTTP clients.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::mpsc;

use serde_json::Value;

/// What the server saw of the request.
#[derive(Debug, Clone)]
pub struct Seen {
    /// The request line and headers, as sent, without the blank line.
    pub head: String,
    /// The body, parsed as JSON.
    pub body: Value,
}

/// Answers one request with `answer` (raw bytes: status line, headers, body), or holds
/// the connection open until the client gives up when `answer` is `None`. Returns the URL
/// (`http://127.0.0.1:PORT/runs`) and where the request will be reported.
pub fn serve_once(answer: Option<Vec<u8>>) -> (String, mpsc::Receiver<Seen>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1");
    let url = format!("http://{}/runs", listener.local_addr().expect("addr"));
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let Ok((mut conn, _)) = listener.accept() else {
            return;
        };
        let _ = tx.send(read_request(&conn));
        match answer {
            Some(a) => {
                let _ = conn.write_all(&a);
            }
            None => {
                let mut sink = Vec::new();
                let _ = conn.read_to_end(&mut sink);
            }
        }
    });
    (url, rx)
}

fn read_request(conn: &TcpStream) -> Seen {
    let mut r = BufReader::new(conn.try_clone().expect("clone the connection"));
    let mut head = String::new();
    let mut length = 0;
    loop {
        let mut line = String::new();
        if r.read_line(&mut line).unwrap_or(0) == 0 {
            break;
        }
        if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
            length = v.trim().parse().unwrap_or(0);
        }
        if line == "\r\n" {
            break;
        }
        head.push_str(&line);
    }
    let mut body = vec![0; length];
    let _ = r.read_exact(&mut body);
    Seen {
        head,
        body: serde_json::from_slice(&body).unwrap_or(Value::Null),
    }
}

/// An HTTP/1.1 answer with a JSON body.
pub fn answer(status: &str, body: &str) -> Option<Vec<u8>> {
    Some(
        format!(
            "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
            body.len()
        )
        .into_bytes(),
    )
}
