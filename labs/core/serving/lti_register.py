"""LTI Dynamic Registration: the one URL an LMS administrator pastes (Moodle's "Tool URL", Canvas's "Dynamic
Registration"), with which the LMS and LM Lab exchange their endpoints and LM Lab stores the platform and its
deployment in the class database.

The URL carries a secret (lti_keys.registration_secret), so that only whoever runs this server can register a platform;
the exchange itself is pylti1p3's DynamicRegistration."""

from __future__ import annotations

import secrets

from pylti1p3.dynamic_registration import DynamicRegistration

from labs.core.serving import lti_keys, lti_store

TOOL_CONFIG = "https://purl.imsglobal.org/spec/lti-tool-configuration"
PLATFORM_CONFIG = "https://purl.imsglobal.org/spec/lti-platform-configuration"
SCOPES = ["https://purl.imsglobal.org/spec/lti-ags/scope/lineitem",
          "https://purl.imsglobal.org/spec/lti-ags/scope/result.readonly",
          "https://purl.imsglobal.org/spec/lti-ags/scope/score"]


def allowed(secret: str) -> bool:
    return secrets.compare_digest(secret.encode(), lti_keys.registration_secret().encode())


class Registration(DynamicRegistration):
    """LM Lab's side of the exchange: what it tells the platform, and what it keeps of the answer."""

    client_name = "LM Lab"
    description = "See how pre-trained language models work; the handout's workbook, checked on the real model."

    def __init__(self, base_url: str, openid_configuration: str, registration_token: str | None):
        self.base, self.configuration_url, self.token = base_url.rstrip("/"), openid_configuration, registration_token
        self.platform_id: int | None = None

    def get_openid_configuration_endpoint(self) -> str:
        return self.configuration_url

    def get_registration_token(self):
        return self.token

    def get_initiate_login_uri(self) -> str:
        return f"{self.base}/lti/login"

    def get_jwks_uri(self) -> str:
        return f"{self.base}/lti/jwks"

    def get_redirect_uris(self) -> list[str]:
        return [f"{self.base}/lti/launch"]

    def get_target_link_uri(self) -> str:
        return f"{self.base}/lti/launch"

    def get_domain(self) -> str:
        return self.base.split("://", 1)[-1].split("/", 1)[0]

    def get_scopes(self) -> list[str]:
        return SCOPES

    def get_logo_uri(self) -> str:
        return f"{self.base}/favicon.ico"

    def get_messages(self) -> list[dict]:
        return [{"type": "LtiDeepLinkingRequest", "target_link_uri": f"{self.base}/lti/launch",
                 "label": "LM Lab: add a lab, workbook questions or a class session"}]

    def complete_registration(self, openid_configuration: dict, openid_registration: dict):
        tool = openid_registration.get(TOOL_CONFIG, {})
        self.platform_id = lti_store.add_platform(
            openid_configuration["issuer"], openid_registration["client_id"],
            openid_configuration["authorization_endpoint"], openid_configuration["token_endpoint"],
            openid_configuration["jwks_uri"], [tool.get("deployment_id", "")],
            auth_audience=openid_configuration.get("authorization_server"),
            name=openid_configuration.get(PLATFORM_CONFIG, {}).get("product_family_code", ""))
        return self.platform_id
