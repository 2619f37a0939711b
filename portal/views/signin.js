// The sign-in form: paste an API token (gpb_...); errors are shown under the form.
import { h } from '../dom.js';

export default function signin({ message, submit }) {
  const input = h('input', {
    id: 'signin-token', type: 'password', name: 'token', autocomplete: 'off', spellcheck: 'false',
    placeholder: 'gpb_…', required: true, 'data-testid': 'signin-token',
  });
  const button = h('button', { type: 'submit', 'data-testid': 'signin-submit' }, 'Sign in');
  const error = h('p', { class: 'error', role: 'alert', 'data-testid': 'signin-error' });
  const form = h('form', {
    class: 'signin', 'data-testid': 'signin-form',
    async onsubmit(e) {
      e.preventDefault();
      error.textContent = '';
      const token = input.value.trim();
      if (!token) { error.textContent = 'Enter a token.'; return; }
      button.disabled = true;
      try {
        await submit(token);
      } catch (err) {
        error.textContent = err.status === 401 ? `Token refused: ${err.message}` : err.message;
      } finally {
        button.disabled = false;
      }
    },
  },
  h('h1', {}, 'Sign in to gpubank'),
  message ? h('p', { class: 'note', 'data-testid': 'signin-message' }, message) : null,
  h('label', { for: 'signin-token' }, 'API token'),
  input, button, error,
  h('p', { class: 'muted' }, 'gpubank up prints a sign-in link; or create a token with ',
    h('code', {}, 'gpubank token create'), '.'));
  return form;
}
