//! FastCGI (version 1, responder role) on the wire: drives an application server
//! such as PHP-FPM directly, without a web server in front, so the lab can tell
//! PHP's cost from the front's. Spec: "FastCGI Specification", Open Market, 1996
//! (fastcgi-archives.github.io/FastCGI_Specification.html), cited by section below.
//!
//! As with HTTP, the request (BEGIN_REQUEST, PARAMS, empty STDIN) is formatted
//! once and written unchanged for every request; the response reader frames
//! records byte by byte and parses the CGI head of STDOUT for the status.

pub mod record;
pub mod request;
pub mod response;
