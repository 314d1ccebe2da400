<?php
// Where one WordPress home page's time goes: the page rendered once by PHP's CLI, with a
// stamp (wall and CPU time) at each of WordPress's load phases and every database query
// timed (SAVEQUERIES). Hooks are registered before WordPress loads through $wp_filter,
// which WordPress turns into its hooks (WP_Hook::build_preinitialized_hooks), so nothing
// is written into the site's tree. Prints one JSON object.
//
// usage: php8.2 phases.php DOCROOT   (the database's socket and password in the environment)

$docroot = $argv[1];
$stamps = [];
$stamp = function (string $name) use (&$stamps) {
    $r = getrusage();
    $cpu = ($r['ru_utime.tv_sec'] + $r['ru_stime.tv_sec']) * 1e6 + $r['ru_utime.tv_usec'] + $r['ru_stime.tv_usec'];
    $stamps[] = [$name, hrtime(true) / 1e3, $cpu];
};
$stamp('start');
$phases = ['muplugins_loaded', 'plugins_loaded', 'after_setup_theme', 'init', 'wp_loaded', 'wp',
           'template_redirect', 'wp_head', 'loop_start', 'loop_end', 'wp_footer'];
$GLOBALS['wp_filter'] = [];
foreach ($phases as $i => $hook) {
    // Late in the hook (priority 10000): the phase's own work is before the stamp.
    $GLOBALS['wp_filter'][$hook] = [10000 => [['function' => function ($x = null) use ($stamp, $hook) {
        static $seen = [];
        if (!isset($seen[$hook])) { $seen[$hook] = true; $stamp($hook); }
        return $x;
    }, 'accepted_args' => 1]]];
}
define('SAVEQUERIES', true);
$_SERVER['HTTP_HOST'] = 'wordpress.test';
$_SERVER['REQUEST_URI'] = '/';
$_SERVER['REQUEST_METHOD'] = 'GET';
$_SERVER['SERVER_PROTOCOL'] = 'HTTP/1.1';
$_SERVER['SCRIPT_NAME'] = '/index.php';
$_SERVER['PHP_SELF'] = '/index.php';
chdir($docroot);
ob_start();
register_shutdown_function(function () use (&$stamps, $stamp) {
    $html = ob_get_clean();
    $stamp('end');
    global $wpdb;
    $queries = $wpdb->queries ?? [];
    echo json_encode([
        'stamps' => $stamps,
        'bytes' => strlen((string) $html),
        'queries' => count($queries),
        'query_us' => array_sum(array_map(fn ($q) => $q[1] * 1e6, $queries)),
    ]), "\n";
});
require $docroot . '/index.php';
