export const SMS_TEMPLATES = ['2fa_code', 'login_code', 'password_reset_code'] as const;
export type SmsTemplate = (typeof SMS_TEMPLATES)[number];

export const SMS_LANGUAGES = ['en', 'de', 'fr', 'es'] as const;
export type SmsLanguage = (typeof SMS_LANGUAGES)[number];

export interface SmsTemplateVars {
  code: string;
  expiry_min: number;
  lang?: SmsLanguage;
}

interface LanguageTexts {
  /** Singular and plural of "minute". */
  minute: [one: string, other: string];
  templates: Record<SmsTemplate, (code: string, expiry: string) => string>;
}

/**
 * The texts use only GSM-7 characters (ä ö ü ß é è à ñ are in its basic table; á í ó ú ç ê
 * are not, which is why the Spanish texts do without "código"), so a message with a short
 * site name stays within one 160-character segment.
 */
const TEXTS: Record<SmsLanguage, LanguageTexts> = {
  en: {
    minute: ['minute', 'minutes'],
    templates: {
      '2fa_code': (code, expiry) => `Your verification code is ${code}. It expires in ${expiry}.`,
      login_code: (code, expiry) => `Your login code is ${code}. It expires in ${expiry}.`,
      password_reset_code: (code, expiry) => `Your password reset code is ${code}. It expires in ${expiry}.`,
    },
  },
  de: {
    minute: ['Minute', 'Minuten'],
    templates: {
      '2fa_code': (code, expiry) => `Ihr Bestätigungscode lautet ${code}. Er ist ${expiry} gültig.`,
      login_code: (code, expiry) => `Ihr Anmeldecode lautet ${code}. Er ist ${expiry} gültig.`,
      password_reset_code: (code, expiry) => `Ihr Code zum Zurücksetzen des Passworts lautet ${code}. Er ist ${expiry} gültig.`,
    },
  },
  fr: {
    minute: ['minute', 'minutes'],
    templates: {
      '2fa_code': (code, expiry) => `Votre code de vérification est ${code}. Il expire dans ${expiry}.`,
      login_code: (code, expiry) => `Votre code de connexion est ${code}. Il expire dans ${expiry}.`,
      password_reset_code: (code, expiry) =>
        `Votre code pour réinitialiser votre mot de passe est ${code}. Il expire dans ${expiry}.`,
    },
  },
  es: {
    minute: ['minuto', 'minutos'],
    templates: {
      '2fa_code': (code, expiry) => `Usa ${code} para verificar tu identidad. Caduca en ${expiry}.`,
      login_code: (code, expiry) => `Usa ${code} para acceder a tu cuenta. Caduca en ${expiry}.`,
      password_reset_code: (code, expiry) => `Usa ${code} para restablecer tu contraseña. Caduca en ${expiry}.`,
    },
  },
};

/** "1 minute" / "5 minutes" by the language's plural rules (French, unlike English, says "0 minute"). */
function minutes(lang: SmsLanguage, n: number): string {
  const [one, other] = TEXTS[lang].minute;
  return `${n} ${new Intl.PluralRules(lang).select(n) === 'one' ? one : other}`;
}

/**
 * Renders a 2FA SMS from the given variables only, in `vars.lang` (default English),
 * prefixed with `siteName` ("example.com: ...") when one is given.
 */
export function renderSmsTemplate(template: SmsTemplate, vars: SmsTemplateVars, siteName?: string): string {
  const lang = vars.lang ?? 'en';
  const text = TEXTS[lang].templates[template](vars.code, minutes(lang, vars.expiry_min));
  return siteName ? `${siteName}: ${text}` : text;
}
