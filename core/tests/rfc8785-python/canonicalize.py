"""Canonicalise each line of a corpus with the `rfc8785` package.

Reads JSON texts, one per line, from the file named by argv[1]; writes one line per
input: the RFC 8785 bytes in hex, or ERR when the input has no canonical form
(a number no double holds, a lone surrogate). Every number is read as a double, as
RFC 8785 defines numbers (the package refuses integers beyond 2**53 otherwise).
"""

import json
import sys

import rfc8785


def canonical(line: str) -> str:
    try:
        value = json.loads(line, parse_int=float)
        return rfc8785.dumps(value).hex()
    except (ValueError, rfc8785.CanonicalizationError):
        return "ERR"


def main() -> None:
    with open(sys.argv[1], encoding="utf-8") as corpus:
        for line in corpus:
            print(canonical(line.rstrip("\n")))


if __name__ == "__main__":
    main()
