// Light and dark: follows prefers-color-scheme until the user picks one with the toggle (kept in
// localStorage). The choice is the `data-theme` attribute of <html>; style.css reads it.

export type Theme = 'light' | 'dark';

const key = 'polywave-theme';

export function storedTheme(): Theme | undefined {
  try {
    const value = localStorage.getItem(key);
    return value === 'light' || value === 'dark' ? value : undefined;
  } catch {
    return undefined;
  }
}

export function systemTheme(): Theme {
  return window.matchMedia?.('(prefers-color-scheme: dark)').matches ? 'dark' : 'light';
}

export function applyTheme(theme: Theme | undefined): Theme {
  const effective = theme ?? systemTheme();
  document.documentElement.dataset.theme = effective;
  return effective;
}

export function saveTheme(theme: Theme): void {
  try {
    localStorage.setItem(key, theme);
  } catch {
    // private mode: the choice lasts for this page only
  }
  applyTheme(theme);
}
