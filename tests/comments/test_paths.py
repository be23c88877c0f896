from hypothesis import given
from hypothesis import strategies as st

from comments import paths
from comments.ids import MAX_ID
from comments.models import Comment

from ..factories import CommentFactory


@given(st.integers(min_value=0, max_value=MAX_ID))
def test_a_step_round_trips_and_keeps_numeric_order_as_text_order(value):
    step = paths.encode_step(value)
    assert len(step) == paths.STEP
    assert paths.decode_step(step) == value
    if value < MAX_ID:
        assert paths.encode_step(value) < paths.encode_step(value + 1)


@st.composite
def trees(draw):
    """A random forest: node i (ids increase with i, as time-ordered ids do) has a parent among
    the earlier nodes or none."""
    size = draw(st.integers(min_value=1, max_value=60))
    ids = sorted(draw(st.lists(st.integers(min_value=1, max_value=MAX_ID), min_size=size, max_size=size, unique=True)))
    parents = [None] + [draw(st.one_of(st.none(), st.integers(min_value=0, max_value=i - 1))) for i in range(1, size)]
    return ids, parents


@given(trees())
def test_sorting_by_path_is_depth_first_with_siblings_oldest_first(tree):
    ids, parents = tree
    node_path: dict[int, str] = {}
    for i, parent in enumerate(parents):
        base = "" if parent is None else node_path[ids[parent]]
        node_path[ids[i]] = paths.child_path(base, ids[i])

    children: dict[int | None, list[int]] = {None: []}
    for i, parent in enumerate(parents):
        children.setdefault(None if parent is None else ids[parent], []).append(ids[i])

    def walk(node):
        for child in sorted(children.get(node, [])):
            yield child
            yield from walk(child)

    assert sorted(ids, key=node_path.__getitem__) == list(walk(None))
    for node_id, node in node_path.items():
        low, high = paths.subtree_bounds(node)
        inside = {i for i, p in node_path.items() if low <= p < high}
        assert inside == {node_id} | set(walk(node_id))
        assert paths.split_path(node)[-1] == node_id
        assert paths.depth_of(node) == len(paths.split_path(node)) - 1


def test_the_database_orders_paths_depth_first(subject, user):
    """The column's collation must be bytewise on every database, or "~" and digits misorder."""
    a = CommentFactory(subject=subject, author=user)
    b = CommentFactory(subject=subject, author=user)
    a1 = CommentFactory(subject=subject, author=user, reply_to=a)
    b1 = CommentFactory(subject=subject, author=user, reply_to=b)
    a2 = CommentFactory(subject=subject, author=user, reply_to=a)
    a1x = CommentFactory(subject=subject, author=user, reply_to=a1)
    ordered = list(Comment.objects.filter(subject=subject).order_by("path").values_list("pk", flat=True))
    assert ordered == [a.id, a1.id, a1x.id, a2.id, b.id, b1.id]
    low, high = paths.subtree_bounds(a.path)
    subtree = set(Comment.objects.filter(subject=subject, path__gte=low, path__lt=high).values_list("pk", flat=True))
    assert subtree == {a.id, a1.id, a1x.id, a2.id}


def test_a_reply_at_the_depth_cap_is_stored_as_a_sibling_but_still_answers_its_target(subject, user, settings):
    settings.COMMENTS_MAX_DEPTH = 2
    root = CommentFactory(subject=subject, author=user)
    d1 = CommentFactory(subject=subject, author=user, reply_to=root)
    d2 = CommentFactory(subject=subject, author=user, reply_to=d1)
    capped = CommentFactory(subject=subject, author=user, reply_to=d2)
    assert (d2.depth, capped.depth) == (2, 2)
    assert capped.reply_to_id == d2.id
    assert paths.parent_path(capped.path) == paths.parent_path(d2.path)
    d1.refresh_from_db()
    d2.refresh_from_db()
    assert d2.reply_count == 1  # a direct reply, though not below it in the tree
    assert d1.descendant_count == 2
