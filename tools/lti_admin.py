"""LM Lab's LMS connection (LTI 1.3) from the command line: register a platform by hand, list the platforms, show the
addresses to paste into the LMS (Dynamic Registration's URL included), rotate LM Lab's signing key.

    python -m tools.lti_admin urls https://lab.example.edu
    python -m tools.lti_admin add --issuer https://moodle.example.edu --client-id AbC123 \\
        --login https://moodle.example.edu/mod/lti/auth.php --token https://moodle.example.edu/mod/lti/token.php \\
        --jwks https://moodle.example.edu/mod/lti/certs.php --deployment 1
    python -m tools.lti_admin list
    python -m tools.lti_admin rotate-key

It uses the server's class database and data folder (LAB_CLASS_DB, LAB_DATA_DIR), as the app does."""

from __future__ import annotations

import argparse
import json

from labs.classroom import store as class_store
from labs.core.serving import lti_keys, lti_routes, lti_store


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(prog="python -m tools.lti_admin", description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    urls = commands.add_parser("urls", help="the addresses the LMS asks for")
    urls.add_argument("base", help="the address students open LM Lab at, e.g. https://lab.example.edu")
    add = commands.add_parser("add", help="register a platform by hand (its values from the LMS's tool page)")
    for name, what in (("issuer", "Platform ID / issuer"), ("client-id", "Client ID"),
                       ("login", "Authentication request URL (OIDC)"), ("token", "Access token URL"),
                       ("jwks", "Public keyset URL")):
        add.add_argument(f"--{name}", required=True, help=what)
    add.add_argument("--deployment", action="append", default=[], required=True, help="Deployment ID (repeatable)")
    add.add_argument("--audience", help="the token endpoint's audience, if the LMS names one (Brightspace)")
    add.add_argument("--name", default="", help="a name for your own list")
    commands.add_parser("list", help="the registered platforms and their deployments")
    commands.add_parser("rotate-key", help="a new signing key (the previous one stays published a while)")
    args = parser.parse_args(argv)

    lti_routes.configure(lambda: class_store.get().engine, class_store.data_dir())
    if args.command == "urls":
        base = args.base.rstrip("/")
        print(json.dumps({"dynamic_registration_url": f"{base}/lti/register/{lti_keys.registration_secret()}",
                          "tool_url / target_link_uri / redirect_uri": f"{base}/lti/launch",
                          "initiate_login_url": f"{base}/lti/login", "public_keyset_url": f"{base}/lti/jwks"},
                         indent=2))
    elif args.command == "add":
        platform_id = lti_store.add_platform(args.issuer, args.client_id, args.login, args.token, args.jwks,
                                             args.deployment, auth_audience=args.audience, name=args.name)
        print(f"platform {platform_id} registered: {args.issuer} (client {args.client_id})")
    elif args.command == "list":
        print(json.dumps(lti_store.list_platforms(), indent=2, default=str))
    else:
        print(f"new signing key {lti_keys.rotate()}")


if __name__ == "__main__":
    main()
