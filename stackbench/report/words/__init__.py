"""What the terminal and the HTML report both say, worded once: a verdict's sentence, a
warning and its advice, a caveat, a table's rows, a legend. report/text/ and report/html/
lay these out; neither words anything the other says too."""
