"""Every read of the comment core, each with a bounded number of queries (asserted in tests),
in modules by concern; callers import them from here.

* ``visibility``: the viewer, and who may see which comment (the rule as SQL and in Python,
  side by side);
* ``single``: single rows (the subject being listed, sites, one comment for one viewer);
* ``present``: comments shaped as the API shows them to a viewer;
* ``cursors``: signed, scoped cursors and the pagination shapes (keyset, head then tail);
* ``modes``: the lists (two-level, flat, stacked, chains, subtrees, a user's comments);
* ``pages``: lists through the shared page cache.

Lists are keyset-paginated with signed, scoped cursors, so page 500 costs what page 1 costs
and a cursor cannot be replayed against another subject, endpoint, sort or mode. The rows of
every list come through ``rowsql`` (one statement shape generated from one column
specification; see why there); single rows that services go on to change are loaded as models.
"""

from .cursors import Page, decode_cursor, encode_cursor, page_by_id
from .modes import (
    comment_chain,
    comment_tree,
    list_comments,
    list_flat,
    list_replies,
    list_two_level,
    user_comments,
)
from .pages import hot_list_page, list_comments_json
from .present import present_comments, present_new_comment, present_user
from .single import (
    DEMO_SITE_KEY,
    CommentRef,
    comment_floors,
    comment_for_viewer,
    comment_place,
    comment_ref_for_viewer,
    demo_host_url,
    embed_target,
    site_allowed_origins,
    site_by_key,
    site_for_counts,
    site_signin,
    subject_counts,
    subject_for_viewer,
    subject_id_by_key,
    subject_ids_by_key,
    subject_lookup,
    user_by_id,
)
from .visibility import (
    Viewer,
    acts_on_site,
    can_see,
    check_acts_on_site,
    is_site_moderator,
    viewer_for,
    visible_sql,
)

__all__ = [
    "DEMO_SITE_KEY",
    "CommentRef",
    "Page",
    "Viewer",
    "acts_on_site",
    "can_see",
    "check_acts_on_site",
    "comment_chain",
    "comment_floors",
    "comment_for_viewer",
    "comment_place",
    "comment_ref_for_viewer",
    "comment_tree",
    "decode_cursor",
    "demo_host_url",
    "embed_target",
    "encode_cursor",
    "hot_list_page",
    "is_site_moderator",
    "list_comments",
    "list_comments_json",
    "list_flat",
    "list_replies",
    "list_two_level",
    "page_by_id",
    "present_comments",
    "present_new_comment",
    "present_user",
    "site_allowed_origins",
    "site_by_key",
    "site_for_counts",
    "site_signin",
    "subject_counts",
    "subject_for_viewer",
    "subject_id_by_key",
    "subject_ids_by_key",
    "subject_lookup",
    "user_by_id",
    "user_comments",
    "viewer_for",
    "visible_sql",
]
