vcl 4.1;
# Rendered by stackbench (tls-varnish-apache): Apache + mod_php on 127.0.0.1:8081.

backend apache {
    .host = "127.0.0.1";
    .port = "8081";
}

sub vcl_recv {
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
