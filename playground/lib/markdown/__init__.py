"""Markdown as sanitized HTML (model output shown by chat, evaluate, batches and shares): markdown-it with raw
HTML off, Pygments highlighting, TeX kept for the browser's math renderer, then nh3."""
