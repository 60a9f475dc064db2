from edge_hf.cli import main

raise SystemExit(main())
