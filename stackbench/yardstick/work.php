<?php
// stackbench's yardstick of a core (stackbench/yardstick/__init__.py): a fixed amount of
// the work a PHP page does — strings built and split, an MD5, a small sort, a hash table
// filled — timed in repetitions of UNITS units each, after one repetition not counted.
// Deterministic: the same units give the same checksum on every machine, which the lab
// checks, so two yardsticks always measured the same work.
//
//   php -n work.php REPETITIONS UNITS   ->   {"ns": [...], "check": N, "php": "8.2.x"}

function unit(int $i, array &$table): int {
    $s = 'item-' . $i . '-' . str_repeat(chr(97 + $i % 26), 8);
    $h = md5($s);
    $parts = str_split($h, 4);
    sort($parts);
    $key = $parts[0] . ($i % 512);
    $table[$key] = ($table[$key] ?? 0) + strlen(implode('/', $parts));
    $words = explode('-', strtoupper($s));
    return count($words) + crc32($parts[1]) % 7 + strpos($h . 'x', 'x');
}

$repetitions = max(1, (int)($argv[1] ?? 9));
$units = max(1, (int)($argv[2] ?? 35000));
$ns = [];
$check = 0;
for ($r = -1; $r < $repetitions; $r++) {
    $table = [];
    $acc = 0;
    $t0 = hrtime(true);
    for ($i = 0; $i < $units; $i++) {
        $acc += unit($i, $table);
    }
    $elapsed = hrtime(true) - $t0;
    if ($r >= 0) {
        $ns[] = $elapsed;
    }
    $check = $acc + count($table);
}
echo json_encode(['ns' => $ns, 'check' => $check, 'php' => PHP_VERSION]), "\n";
