"""The report a person reads: :mod:`.render` (the page from the package's Jinja2 template),
:mod:`.figures` (matplotlib) and :mod:`.publish`
(a report folder written whole).
"""
