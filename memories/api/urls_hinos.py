"""URL patterns of this module (mounted by memoryhub/urls.py)."""
urlpatterns: list = []
