"""Reading and labelling data: the demo sources and user folders (`sources/*`: the Gita, the XQuAD
paragraphs, the timed lecture tracks, subtitle and text files, verse addresses), cutting text into
fragments (`chunking`), the full and split corpus builds (`builds`), the labeled question sets
(`questions`) and their build/check/card logic (`datacheck`). Layer rule: may import `citegate.core`
and `citegate.evaluation`; it never embeds, never touches the database and never imports models,
store or anything above.
"""
