//! Who holds a port: the user whose process listens on a TCP address of this host.

use std::net::SocketAddr;

/// The user id owning the socket that listens on `addr` (or on the wildcard address at its
/// port), if one listens and this platform can tell.
pub fn listener_uid(addr: SocketAddr) -> Option<u32> {
    crate::imp::listener_uid(addr.ip(), addr.port())
}

/// The user id owning the client end of a TCP connection on this host: `peer` is the
/// client's address as the server sees it, `server` the server's own. `None` when this
/// platform cannot tell (or the client is not on this host).
pub fn peer_uid(peer: SocketAddr, server: SocketAddr) -> Option<u32> {
    crate::imp::connection_uid(peer, server)
}

#[cfg(test)]
mod tests {
    /// Whether this build can tell who owns a socket here: Linux always, the portable
    /// code where `lsof` is installed.
    fn can_tell() -> bool {
        crate::IMPLEMENTATION == "linux"
            || std::process::Command::new("lsof")
                .arg("-v")
                .output()
                .is_ok()
    }

    #[test]
    fn a_port_this_process_listens_on_is_its_users() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        match super::listener_uid(addr) {
            Some(uid) => assert_eq!(uid, crate::account::uid()),
            None => assert!(!can_tell(), "this build can tell, and did not"),
        }
        let client = std::net::TcpStream::connect(addr).unwrap();
        let (_, peer) = l.accept().unwrap();
        assert_eq!(peer, client.local_addr().unwrap());
        match super::peer_uid(peer, addr) {
            Some(uid) => assert_eq!(uid, crate::account::uid()),
            None => assert!(!can_tell(), "this build can tell, and did not"),
        }
        drop((client, l));
        assert_eq!(super::listener_uid(addr), None, "nobody listens now");
    }
}
