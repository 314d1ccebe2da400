from stackbench.cli import main

raise SystemExit(main())
