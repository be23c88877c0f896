"""Sign-in with GitHub, Google and OpenID Connect providers, in the widget's sign-in window.

django-allauth runs the protocol: the authorization-code flow with PKCE, its state (kept in
the window's session, good once and for ten minutes), the exchange of the code and the checks
of the ID token (issuer, audience, expiry). This package chooses which providers a site offers
(``providers``), adds the nonce and checks it, makes or finds the local user (``services``), and
ends every flow in the window itself (``views``): signed in, with a bearer token handed to the
widget as the email link does, or a page that says what went wrong. A window that a provider's
page cut off from the widget (Cross-Origin-Opener-Policy) keeps the sign-in for the widget to
take with its secret (``SignInHandoff``, ``api``). No Django session is ever logged in."""
