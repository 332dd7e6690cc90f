#!/usr/bin/env python3
"""tidy-mdoc.py — makes an mdoc page from swift-argument-parser's
generate-manual lint-clean (mandoc -T lint -W warning, groff -ww): its
help texts come as paragraphs with blank lines and several sentences per
line, which mdoc wants as .Pp and one sentence per line.

    python3 scripts/tidy-mdoc.py < generated.8 > man/tetherd.8
"""
import re
import sys

# A sentence ends at . ! or ? followed by a space and what starts one.
SENTENCE_END = re.compile(r'(?<=[A-Za-z0-9)\]"\'][.!?])\s+(?=[A-Z$(`"\'])')


def split_sentences(line):
    parts = SENTENCE_END.split(line)
    # A text line must not start with a control character.
    return [("\\&" + p) if p[:1] in (".", "'") else p for p in parts]


def tidy(lines):
    out = []
    for line in lines:
        if line.strip() == "":
            out.append(".Pp")
        elif line.startswith(".") or line.startswith("'"):
            # A paragraph break right before a list item, a list's start or
            # end, or a section heading is one mdoc skips (and warns about).
            if re.match(r"\.(It|Bl|El|Sh|Ss)\b", line) and out and out[-1] == ".Pp":
                out.pop()
            out.append(line)
        else:
            out.extend(split_sentences(line))
    # Two breaks in a row are one.
    result = []
    for line in out:
        if line == ".Pp" and result and result[-1] == ".Pp":
            continue
        result.append(line)
    return result


if __name__ == "__main__":
    text = sys.stdin.read().split("\n")
    if text and text[-1] == "":
        text.pop()
    sys.stdout.write("\n".join(tidy(text)) + "\n")
