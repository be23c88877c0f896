"""The admin shows who signed in with which provider, and none of allauth's pages whose rows
the service never reads (providers come from the environment)."""


def test_the_admin_shows_provider_accounts_only(admin_client):
    index = admin_client.get("/admin/").content.decode()
    assert "/admin/socialaccount/socialaccount/" in index
    for unused in (
        "/admin/socialaccount/socialapp/",
        "/admin/socialaccount/socialtoken/",
        "/admin/account/emailaddress/",
    ):
        assert unused not in index
