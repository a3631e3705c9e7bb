"""Write the benchmark's shared source data for a spec (``--spec FILE``): skipped when it is already there."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import Spec, generate, session  # noqa: E402

if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--spec", required=True)
    spec = Spec.load(parser.parse_args().spec)
    spark = session(spec, "generate")
    generate(spark, spec)
    spark.stop()
