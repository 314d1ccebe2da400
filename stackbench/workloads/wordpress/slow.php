<?php
/*
 * Plugin Name: stackbench slow request
 * Description: The lab's deliberately slow request (the wordpress-mix-slow workload): a page
 *   asked with ?stackbench_slow=MS holds its PHP worker MS milliseconds once WordPress has run
 *   the page's query, as a slow database query or a remote call would; every other request is
 *   untouched. At most 10 s: a worker is never held past the load engine's deadline by a typo.
 */
if (isset($_GET['stackbench_slow'])) {
    add_action('wp', function () {
        $ms = min(10000, max(0, (int) $_GET['stackbench_slow']));
        if ($ms > 0) {
            usleep($ms * 1000);
        }
    });
}
