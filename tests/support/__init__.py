"""What the tests share and that is no test: a live server, API clients and the envelope assertions
(helpers), per-resource helpers (*_helpers), the stand-in push bouncer, and the checkout's paths.
Fixtures are not here: they are defined once, in tests/conftest.py or in a test folder's conftest.py."""
