"""uslub's benchmark driver, as a package; bench/run.py is its command line.

One module per benchmark family on shared ones:

  config   names, titles, peers, modes, configurations, limits (imports nothing)
  stats    quantiles, geometric means, paired ratios, target checks, verdicts
  fmt      number formatting of the text tables
  peers    finding the build's binaries and the peers; machine information
  runner   command lines, one process and its checks, the interleaved rounds
  single   B1, B4            bulk    B2, B3
  hotpath  each hot path's instructions (objdump, callgrind) beside its B1 time
  ext      B5, B6, B6-acc, B7, B-meta
  debug    B-debug, B-dfree  suite   B8, B9            rcu     B-rcu
  scale    B-scale (threads 1, 2, 4, .. 4x the CPUs)
  table    the console table and bench.md's body; the target rows
  plot     bench.png         publish run.py --publish (the README's table)
  cli      main(): the options, the run, bench.json / bench.md / bench.png

Imports go one way, config first, cli last; there is no cycle.
"""
