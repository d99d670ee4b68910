"""What the model says about attached media: the decoded facts of each part (decoding is in engines/media.py)."""

from playground.localapi.engines.generator.shapes import Media


def describe_media(media: list[Media]) -> str:
    lines = []
    counters: dict[str, int] = {}
    for item in media:
        counters[item.kind] = counters.get(item.kind, 0) + 1
        label = {"image": "Image", "audio": "Audio", "video": "Video", "pdf": "PDF"}[item.kind]
        lines.append(f"- **{label} {counters[item.kind]}**: {item.summary}")
        if item.text:
            lines.append("")
            lines.append("  Extracted text:")
            lines.append("")
            lines.extend(f"  > {line}" if line else "  >" for line in item.text.strip().splitlines())
    return "\n".join(lines)
