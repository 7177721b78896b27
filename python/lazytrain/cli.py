"""The `lazytrain` console command: runs the command line installed with the
package (lazytrain/bin/lazytrain: run_mlm, run_clm, train_tokenizer, ...)."""
import os
import sys


def main():
    binary = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bin", "lazytrain")
    if not os.path.exists(binary):
        sys.exit(f"lazytrain: the command line is missing from the package ({binary}); reinstall with pip install .")
    os.execv(binary, [binary] + sys.argv[1:])


if __name__ == "__main__":
    main()
