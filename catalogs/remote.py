"""Opening the filesystem of a lake URL, and a quick look at an object store before anything else touches it.

A local path goes through fsspec alone: nothing here imports s3fs or botocore unless the URL is ``s3://``.
On S3 (``pip install 'perflake[s3]'``: s3fs) one ``HeadBucket`` request with short timeouts and one attempt
(PROBE_SECONDS at most, whatever the endpoint does) turns what would otherwise be a botocore traceback -- after
minutes of retries when the endpoint is unreachable -- into one :class:`~perflake.errors.StorageError` line
naming the lake and the problem: s3fs not installed, no credentials, wrong credentials (or none that may list
the bucket), no such bucket, an endpoint that cannot be reached.  The lake's own filesystem keeps s3fs'
defaults (timeouts, retries) for the real work.

Credentials and the endpoint come from where botocore and fsspec look for them: ``AWS_ACCESS_KEY_ID`` /
``AWS_SECRET_ACCESS_KEY`` / ``AWS_PROFILE``, ``AWS_ENDPOINT_URL`` (or ``AWS_ENDPOINT_URL_S3``) for an
S3-compatible server, fsspec's ``FSSPEC_S3_<OPTION>`` or ``FSSPEC_S3`` (JSON) variables, or
``Lake(url, storage_options={...})``.
"""

from __future__ import annotations

import os

import fsspec

from perflake.errors import StorageError

S3_PROTOCOLS = ("s3", "s3a")
# botocore Config of the probe (one HeadBucket, answered in milliseconds by a healthy store): a refused connection
# fails at once, an endpoint that never connects after 2 s, one that connects but never answers after 2 s more
# (total_max_attempts counts the first attempt: 1 is no retry; botocore's max_attempts would not count it)
PROBE_CONFIG = {"connect_timeout": 2, "read_timeout": 2, "retries": {"total_max_attempts": 1, "mode": "standard"}}
PROBE_ATTEMPTS = 1  # s3fs' own retry loop around botocore's (5 attempts with back-off by default)
# the longest the probe can wait on the network: every attempt connects and reads within its timeouts
PROBE_SECONDS = (PROBE_CONFIG["connect_timeout"] + PROBE_CONFIG["read_timeout"]) \
    * PROBE_CONFIG["retries"]["total_max_attempts"] * PROBE_ATTEMPTS


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def open_fs(url: str, storage_options: dict | None = None):
    """``(filesystem, path)`` of ``url`` (fsspec.core.url_to_fs); a filesystem package that is not installed or
    a protocol fsspec does not know is a StorageError.  An object store is then probed (:func:`probe`)."""
    protocol = fsspec.core.split_protocol(url)[0] or "file"
    try:
        fs, path = fsspec.core.url_to_fs(url, **(storage_options or {}))
    except ImportError as exc:
        if protocol in S3_PROTOCOLS:
            raise StorageError(url, "a lake on S3 needs s3fs, which is not installed: pip install 'perflake[s3]'") \
                from None
        raise StorageError(url, f"the {protocol}:// filesystem is not installed ({_first_line(exc)})") from None
    except ValueError as exc:  # "Protocol not known: ..."
        raise StorageError(url, f"cannot open this URL ({_first_line(exc)})") from None
    if protocol in S3_PROTOCOLS:
        probe_s3(fs, url, path)
    return fs, path


def _endpoint(fs) -> str:
    """The endpoint the probe talked to (or would have), for the message."""
    client = getattr(fs, "_s3", None)
    if client is not None:
        return client.meta.endpoint_url
    return (fs.endpoint_url or fs.client_kwargs.get("endpoint_url") or os.environ.get("AWS_ENDPOINT_URL_S3")
            or os.environ.get("AWS_ENDPOINT_URL") or "AWS S3")


def probe_filesystem(fs):
    """A new s3fs filesystem with the options of ``fs`` (endpoint, credentials) but the probe's timeouts and
    attempts (PROBE_CONFIG, PROBE_ATTEMPTS): what :func:`probe_s3` sends its one request with."""
    options = dict(fs.storage_options)
    options["config_kwargs"] = {**options.get("config_kwargs", {}), **PROBE_CONFIG}
    quick = type(fs)(**options, skip_instance_cache=True)
    quick.retries = PROBE_ATTEMPTS
    return quick


def probe_s3(fs, url: str, path: str) -> None:
    """One HeadBucket on the bucket of ``path``, with the options of ``fs`` but short timeouts and no retry
    loop; StorageError with the reason unless the bucket exists and these credentials may list it.  (Listing
    is what a lake needs anyway: the catalog is found by listing ``runs/``.)"""
    from botocore.exceptions import (
        BotoCoreError,
        ClientError,
        ConnectionError,
        HTTPClientError,
        NoCredentialsError,
        PartialCredentialsError,
    )

    bucket = path.split("/", 1)[0]
    quick = probe_filesystem(fs)
    try:
        quick.call_s3("head_bucket", Bucket=bucket)
        return
    except NoCredentialsError:
        problem = ("no S3 credentials found (set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE, "
                   "or pass storage_options)")
    except PartialCredentialsError as exc:
        problem = f"incomplete S3 credentials ({_first_line(exc)})"
    except FileNotFoundError:
        problem = f"no bucket {bucket!r} at {_endpoint(quick)} (perflake does not create buckets: create it first)"
    except PermissionError:
        problem = (f"access to bucket {bucket!r} at {_endpoint(quick)} denied: wrong credentials, or ones that may "
                   "not list this bucket")
    except (ConnectionError, HTTPClientError, TimeoutError) as exc:
        problem = f"cannot reach the S3 endpoint {_endpoint(quick)} ({_first_line(exc)})"
    except (OSError, BotoCoreError, ClientError) as exc:  # a redirect to another region, a server error...
        problem = f"the S3 endpoint {_endpoint(quick)} refused the bucket {bucket!r} ({_first_line(exc)})"
    raise StorageError(url, problem)


def delta_options(fs) -> dict:
    """The storage options delta-rs needs for the S3 filesystem ``fs`` (fsspec's s3fs): the same endpoint and
    credentials, in delta-rs' names; unset ones are left to delta-rs, which reads the same ``AWS_*`` variables."""
    so = dict(getattr(fs, "storage_options", {}) or {})
    endpoint = _endpoint(fs)
    out = {}
    if endpoint and endpoint != "AWS S3":
        out["AWS_ENDPOINT_URL"] = endpoint
        if endpoint.startswith("http://"):
            out["AWS_ALLOW_HTTP"] = "true"
    key, secret, token = so.get("key"), so.get("secret"), so.get("token")
    if not key and not so.get("anon"):  # botocore's chain: variables, AWS_PROFILE, config files, roles
        import botocore.session

        creds = botocore.session.Session(profile=so.get("profile")).get_credentials()
        if creds is not None:
            frozen = creds.get_frozen_credentials()
            key, secret, token = frozen.access_key, frozen.secret_key, frozen.token
    if key:
        out["AWS_ACCESS_KEY_ID"], out["AWS_SECRET_ACCESS_KEY"] = key, secret
    if token:
        out["AWS_SESSION_TOKEN"] = token
    region = (so.get("client_kwargs") or {}).get("region_name") or os.environ.get("AWS_REGION") \
        or os.environ.get("AWS_DEFAULT_REGION") or "us-east-1"
    out["AWS_REGION"] = region
    return out
