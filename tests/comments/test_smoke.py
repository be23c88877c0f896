from comments.models import Subject

from ..factories import CommentFactory


def test_a_reply_counts_in_its_subject_and_thread(subject):
    root = CommentFactory(subject=subject)
    CommentFactory(subject=subject, reply_to=root)
    subject.refresh_from_db()
    root.refresh_from_db()
    assert (subject.comment_count, subject.root_count, root.reply_count) == (2, 1, 1)
    assert Subject.objects.get(pk=subject.pk).floor_seq == 1
