vcl 4.1;
# Rendered by stackbench (tls-varnish-apache): Apache + mod_php on 127.0.0.1:8081.

backend apache {
    .host = "127.0.0.1";
    .port = "8081";
}

sub vcl_recv {
    # WordPress's test cookie, which its login page sets on anyone, holds nothing of a
    # visitor: a page request that carries it alone is anonymous and cached like any
    # other (its login's POST keeps it: WordPress refuses a login without). Every other
    # cookie — a logged-in reader's, an application's session — reaches Varnish's built-in
    # rules, which pass a request with a Cookie or Authorization header to Apache and
    # never cache an answer that sets a cookie (docs/servers.md, "Caches and cookies").
    if (req.http.Cookie && (req.method == "GET" || req.method == "HEAD")) {
        set req.http.Cookie = regsuball(req.http.Cookie, "(^|;)\s*wordpress_test_cookie=[^;]*", "");
        set req.http.Cookie = regsub(req.http.Cookie, "^[;\s]+", "");
        if (req.http.Cookie == "") {
            unset req.http.Cookie;
        }
    }
    # varnish_mode = cache: Varnish's built-in rules, which cache PHP responses
    # that set no cookie and no Cache-Control (hello.php becomes a hit; docs/servers.md,
    # "Varnish").
}

sub vcl_deliver {
    # What the cache did, so the lab counts hits and never mistakes a cached stack for
    # a fast one.
    if (obj.uncacheable) {
        set resp.http.X-Cache = "PASS";
    } elsif (obj.hits > 0) {
        set resp.http.X-Cache = "HIT";
    } else {
        set resp.http.X-Cache = "MISS";
    }
}
