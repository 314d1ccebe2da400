<?php
// Installs the lab's WordPress site non-interactively, from a content file written by
// content.py (fixed seed, fixed dates): the same database bytes on every machine with
// the same WordPress and MariaDB. Run by provision.py with php-cli:
//   php8.2 install.php TREE CONTENT.json   (STACKBENCH_DB_SOCKET, _PASSWORD in the environment)
// Prints one JSON line: what was created.

if ($argc !== 3) { fwrite(STDERR, "usage: install.php TREE CONTENT.json\n"); exit(2); }
$tree = rtrim($argv[1], '/');
$content = json_decode(file_get_contents($argv[2]), true);

// WordPress wants a request; the site's address is set below from the content file.
$_SERVER['HTTP_HOST'] = 'localhost';
$_SERVER['REQUEST_URI'] = '/';
$_SERVER['SERVER_PROTOCOL'] = 'HTTP/1.1';
define('WP_INSTALLING', true);
// No mail is sent (the installer mails the admin): a pluggable function of our own.
function wp_mail() { return true; }

require $tree . '/wp-load.php';
require_once ABSPATH . 'wp-admin/includes/upgrade.php';

$site = $content['site'];
wp_install($site['title'], $site['admin'], $site['email'], true, '', $site['password'], $site['language']);

// The installer's own sample post, page and comment carry the install time: remove
// them, so that every provisioning serves the same bytes.
foreach (get_posts(['post_type' => ['post', 'page'], 'post_status' => 'any', 'numberposts' => -1]) as $p) {
    wp_delete_post($p->ID, true);
}
foreach (get_comments() as $c) { wp_delete_comment($c->comment_ID, true); }
// The sample privacy page is a draft with the install time too.
update_option('wp_page_for_privacy_policy', 0);

update_option('blogdescription', $site['tagline']);
update_option('permalink_structure', '/%postname%/');
update_option('posts_per_page', $site['posts_per_page']);
update_option('default_comment_status', 'closed');
update_option('timezone_string', 'UTC');

$terms = [];
foreach ($content['categories'] as $cat) {
    $r = wp_insert_term($cat['name'], 'category', ['slug' => $cat['slug'], 'description' => $cat['description']]);
    if (is_wp_error($r)) { fwrite(STDERR, $r->get_error_message() . "\n"); exit(1); }
    $terms[$cat['slug']] = $r['term_id'];
}
// "Uncategorized" would hold no post after the deletions: keep it, it is stock WordPress.

$posts = 0; $comments = 0;
foreach ($content['posts'] as $p) {
    $id = wp_insert_post([
        'post_type' => $p['type'], 'post_status' => 'publish', 'post_author' => 1,
        'post_title' => $p['title'], 'post_name' => $p['slug'], 'post_content' => $p['content'],
        'post_excerpt' => $p['excerpt'], 'post_date' => $p['date'], 'post_date_gmt' => $p['date'],
        'post_modified' => $p['date'], 'post_modified_gmt' => $p['date'],
        'post_category' => array_map(function ($s) use ($terms) { return $terms[$s]; }, $p['categories']),
        'tags_input' => $p['tags'], 'comment_status' => 'open',
    ], true);
    if (is_wp_error($id)) { fwrite(STDERR, $id->get_error_message() . "\n"); exit(1); }
    // wp_insert_post sets post_modified to now: pin it.
    $GLOBALS['wpdb']->update($GLOBALS['wpdb']->posts,
        ['post_modified' => $p['date'], 'post_modified_gmt' => $p['date']], ['ID' => $id]);
    $posts++;
    foreach ($p['comments'] as $c) {
        wp_insert_comment([
            'comment_post_ID' => $id, 'comment_author' => $c['author'], 'comment_author_email' => $c['email'],
            'comment_content' => $c['content'], 'comment_date' => $c['date'], 'comment_date_gmt' => $c['date'],
            'comment_approved' => 1,
        ]);
        $comments++;
    }
}
// The site's readers: subscribers who log in (content.py's READERS). Their password here
// and the admin's are a hash no password matches: every start of the database sets its own
// (workloads/wordpress/accounts.py), so the snapshot lets nobody in. Registered at the
// site's start date, so every provisioning holds the same rows.
$readers = 0;
foreach ($content['readers'] as $r) {
    $id = wp_insert_user(['user_login' => $r['login'], 'user_email' => $r['email'], 'display_name' => $r['name'],
                          'nickname' => $r['name'], 'user_pass' => 'set-on-every-start', 'role' => 'subscriber'], true);
    if (is_wp_error($id)) { fwrite(STDERR, $id->get_error_message() . "\n"); exit(1); }
    $readers++;
}
$GLOBALS['wpdb']->query("UPDATE {$GLOBALS['wpdb']->users} SET user_pass = '*', user_registered = '"
                        . esc_sql($content['posts'][0]['date']) . "'");
flush_rewrite_rules(false);  // the rules live in the database; .htaccess is written by the lab
// Transients written during the install hold timestamps: none is needed to serve pages.
$GLOBALS['wpdb']->query("DELETE FROM {$GLOBALS['wpdb']->options} WHERE option_name LIKE '\\_transient\\_%' OR option_name LIKE '\\_site\\_transient\\_%'");

echo json_encode(['posts' => $posts, 'comments' => $comments, 'categories' => count($terms), 'readers' => $readers,
                  'wordpress' => $GLOBALS['wp_version']]), "\n";
