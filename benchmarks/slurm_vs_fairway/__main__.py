"""`python -m benchmarks.slurm_vs_fairway [--quick]`: see run.py for what it prints."""

from benchmarks.slurm_vs_fairway.standalone import configure

configure()  # before anything that imports the models

from benchmarks.slurm_vs_fairway.run import main  # noqa: E402

raise SystemExit(main())
