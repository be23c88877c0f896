"""A generated Disqus XML export, as big as asked, written as it is made (the generator keeps a
few recent post ids per thread, nothing more).

Shape: a thread per 50 posts (busy threads more likely), an author per 20 posts (40% guests),
half the posts top-level and the others replying to one of the last 30 posts of their thread
(conversation chains), dates rising over ten years, 1% deleted and 0.5% spam, one reply in a
thousand dated a minute before the post it answers (exports carry clock skew), and HTML
messages of one to four paragraphs with emphasis, links and Chinese text, each one different.
"""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from xml.sax.saxutils import escape

START = datetime(2014, 1, 1, tzinfo=UTC)
SPAN = timedelta(days=3650)

_WORDS = (
    "the of and to in is that for it as was with be by on not he this are or his from at which but have an they you "
    "were her she there been one all we their has would when if so no what up out who them some could time more "
    "these two may first then do any like my now over such our man me even most made after also did many before must "
    "through back years where much your way well down should because each just those people how too little state "
    "good very make world still own see men work long get here between both life being under never day same another "
    "know while last might us great old year off come since against go came right used take three"
).split()
_CHINESE = ["我觉得这个方案很有意思", "同意楼上的观点", "缓存的部分写得很清楚", "请问有基准测试的脚本吗", "谢谢分享"]


def _sentence(rng: random.Random) -> str:
    words = [rng.choice(_WORDS) for _ in range(rng.randint(4, 16))]
    if rng.random() < 0.15:
        i = rng.randrange(len(words))
        words[i] = f"<b>{words[i]}</b>"
    if rng.random() < 0.1:
        i = rng.randrange(len(words))
        words[i] = f"<i>{words[i]}</i>"
    text = " ".join(words).capitalize() + rng.choice([".", ".", ".", "?", "!"])
    if rng.random() < 0.1:
        text += " " + rng.choice(_CHINESE) + "。"
    return text


def _message(rng: random.Random, n: int) -> str:
    paragraphs = []
    for _ in range(rng.randint(1, 4)):
        paragraphs.append(" ".join(_sentence(rng) for _ in range(rng.randint(1, 3))))
    if rng.random() < 0.1:
        paragraphs[-1] += f' See <a href="https://example.com/ref/{n}" rel="nofollow noopener">this</a>.'
    paragraphs[-1] += f" #{n}"
    return "".join(f"<p>{p}</p>" for p in paragraphs)


def write_disqus_export(path: str, *, comments: int, seed: int = 16) -> dict:
    """Write the export; what it holds (threads, posts, authors)."""
    rng = random.Random(seed)
    threads = max(1, comments // 50)
    authors = max(1, comments // 20)
    recent: dict[int, list[int]] = {}
    step = SPAN / max(comments, 1)
    with open(path, "w", encoding="utf-8", buffering=1 << 20) as out:
        out.write(
            '<?xml version="1.0" encoding="utf-8"?>\n<disqus xmlns="http://disqus.com" '
            'xmlns:dsq="http://disqus.com/disqus-internals" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">\n'
        )
        for t in range(threads):
            created = START + SPAN * t / threads / 2
            out.write(
                f'  <thread dsq:id="{t + 1}">\n    <id>post-{t + 1}</id>\n    <forum>bench</forum>\n'
                f"    <link>https://blog.example/{created:%Y/%m}/post-{t + 1}/</link>\n"
                f"    <title>Post number {t + 1}</title>\n    <message/>\n"
                f"    <createdAt>{created:%Y-%m-%dT%H:%M:%SZ}</createdAt>\n"
                "    <isClosed>false</isClosed>\n    <isDeleted>false</isDeleted>\n  </thread>\n"
            )
        dates: dict[int, datetime] = {}
        for n in range(1, comments + 1):
            thread = min(threads, int(threads * rng.random() ** 2) + 1)
            created = START + step * n + timedelta(seconds=rng.random())
            pool = recent.setdefault(thread, [])
            parent = rng.choice(pool) if pool and rng.random() < 0.5 else None
            if parent is not None and rng.random() < 0.001:
                created = dates[parent] - timedelta(minutes=1)
            pool.append(n)
            if len(pool) > 30:
                dates.pop(pool.pop(0), None)
            dates[n] = created
            author = int(authors * rng.random() ** 1.5)
            r = rng.random()
            deleted, spam = ("true", "false") if r < 0.01 else ("false", "true") if r < 0.015 else ("false", "false")
            if author % 5 < 2:
                author_xml = (
                    f"<email>guest{author}@example.com</email><name>Guest {author}</name>"
                    "<isAnonymous>true</isAnonymous>"
                )
            else:
                author_xml = (
                    f"<email>user{author}@example.com</email><name>User {author}</name>"
                    f"<isAnonymous>false</isAnonymous><username>user{author}</username>"
                )
            parent_xml = f'\n    <parent dsq:id="{parent}"/>' if parent is not None else ""
            out.write(
                f'  <post dsq:id="{n}">\n    <id/>\n    <message><![CDATA[{_message(rng, n)}]]></message>\n'
                f"    <createdAt>{created:%Y-%m-%dT%H:%M:%SZ}</createdAt>\n"
                f"    <isDeleted>{deleted}</isDeleted>\n    <isSpam>{spam}</isSpam>\n"
                f"    <author>{author_xml}</author>\n"
                f"    <ipAddress>{escape(f'10.{n % 250}.{n // 250 % 250}.{n % 7 + 1}')}</ipAddress>\n"
                f'    <thread dsq:id="{thread}"/>{parent_xml}\n  </post>\n'
            )
        out.write("</disqus>\n")
    return {"threads": threads, "posts": comments, "authors": authors}
