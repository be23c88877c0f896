from django.utils import timezone

from likes.models import Like

from ..factories import CommentFactory, UserFactory


def test_comment_objects_say_whether_the_viewer_likes_them_without_an_extra_query(
    subject, client_for, django_assert_max_num_queries
):
    fan, other = UserFactory(), UserFactory()
    liked, not_liked = CommentFactory(subject=subject), CommentFactory(subject=subject)
    Like.objects.create(comment_id=liked.id, user=fan, subject_id=subject.id, created_at=timezone.now())
    url = f"/api/v1/subjects/{subject.id}/comments?mode=flat"

    fan_client = client_for(fan)
    # token, subject, rows, contents with the liked flag
    with django_assert_max_num_queries(4):
        items = fan_client.get(url).json()["items"]
    assert {i["id"]: i["liked"] for i in items} == {liked.id: True, not_liked.id: False}
    assert {i["liked"] for i in client_for(other).get(url).json()["items"]} == {False}
