// HTML pages modelled on Keycloak's login theme: the element ids a browser
// test looks for (kc-form-login, username, password, kc-login, input-error,
// kc-logout, kc-page-title) are Keycloak's.

import { escapeHtml as h } from './http.mjs';

function layout(realm, title, body) {
  return `<!DOCTYPE html>
<html class="login-pf" lang="en">
<head>
  <meta charset="utf-8">
  <meta name="robots" content="noindex, nofollow">
  <meta name="viewport" content="width=device-width,initial-scale=1">
  <title>${h(title)}</title>
  <style>
    body{font-family:sans-serif;background:#f0f0f0;margin:0}
    #kc-header{padding:2em 0 1em;text-align:center;font-size:1.4em;color:#333}
    .card-pf{max-width:420px;margin:0 auto;background:#fff;padding:1.5em 2em 2em;box-shadow:0 1px 3px rgba(0,0,0,.2)}
    #kc-page-title{font-size:1.4em;font-weight:normal;text-align:center;margin:0 0 1em}
    label{display:block;margin:.8em 0 .3em}
    input[type=text],input[type=password]{width:100%;box-sizing:border-box;padding:.5em}
    input[type=submit],button{margin-top:1.2em;width:100%;padding:.6em;background:#0066cc;color:#fff;border:0;cursor:pointer}
    .kc-feedback-text,.alert-error{color:#c9190b}
    .kc-standin-note{margin-top:1.5em;font-size:.75em;color:#777;text-align:center}
  </style>
</head>
<body>
<div class="login-pf-page">
  <div id="kc-header" class="login-pf-page-header"><div id="kc-header-wrapper">${h(realm.displayName)}</div></div>
  <div class="card-pf">
    <header class="login-pf-header"><h1 id="kc-page-title">${h(title)}</h1></header>
    <div id="kc-content"><div id="kc-content-wrapper">
${body}
    </div></div>
    <p class="kc-standin-note">keycloak-standin (test double of a Keycloak realm)</p>
  </div>
</div>
</body>
</html>
`;
}

export function loginPage(realm, { action, username = '', error = '' }) {
  const invalid = error ? 'true' : 'false';
  const errorHtml = error
    ? `\n          <span id="input-error" class="pf-c-form__helper-text pf-m-error required kc-feedback-text" aria-live="polite">${h(error)}</span>`
    : '';
  return layout(realm, 'Sign in to your account', `      <div id="kc-form"><div id="kc-form-wrapper">
        <form id="kc-form-login" onsubmit="login.disabled = true; return true;" action="${h(action)}" method="post">
          <div class="form-group">
            <label for="username" class="pf-c-form__label pf-c-form__label-text">Username or email</label>
            <input tabindex="1" id="username" class="pf-c-form-control" name="username" value="${h(username)}" type="text" autofocus autocomplete="off" aria-invalid="${invalid}">${errorHtml}
          </div>
          <div class="form-group">
            <label for="password" class="pf-c-form__label pf-c-form__label-text">Password</label>
            <input tabindex="2" id="password" class="pf-c-form-control" name="password" type="password" autocomplete="off" aria-invalid="${invalid}">
          </div>
          <div id="kc-form-buttons" class="form-group">
            <input type="hidden" id="id-hidden-input" name="credentialId">
            <input tabindex="4" class="pf-c-button pf-m-primary pf-m-block btn-lg" name="login" id="kc-login" type="submit" value="Sign In">
          </div>
        </form>
      </div></div>`);
}

export function logoutConfirmPage(realm, { action, sessionCode }) {
  return layout(realm, 'Logging out', `      <div id="kc-logout-confirm" class="content-area">
        <p class="instruction">Do you want to log out?</p>
        <form class="form-actions" action="${h(action)}" method="POST">
          <input type="hidden" name="session_code" value="${h(sessionCode)}">
          <input tabindex="4" class="pf-c-button pf-m-primary pf-m-block btn-lg" name="confirmLogout" id="kc-logout" type="submit" value="Logout">
        </form>
      </div>`);
}

export function infoPage(realm, title, message) {
  return layout(realm, title, `      <div id="kc-info-message"><p class="instruction">${h(message)}</p></div>`);
}

export function errorPage(realm, message) {
  return layout(realm, 'We are sorry...', `      <div id="kc-error-message"><p class="instruction alert-error">${h(message)}</p></div>`);
}
