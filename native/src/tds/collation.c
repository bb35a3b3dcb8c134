/*
 * collation.c: the code page of char/varchar/text data, from the 5-byte collation of
 * COLMETADATA (MS-TDS 2.2.5.1.2: 20-bit LCID, 8 flag bits of which bit 26 is fUTF8, a 4-bit
 * version, then the SQL sort id).
 *
 * Resolution order: the UTF-8 flag means UTF-8; a non-zero sort id is a SQL collation whose
 * sort order fixes the code page (SQL_Latin1_General_CP1_CI_AS is sort id 52, Windows-1252);
 * otherwise the Windows locale (LCID) names its ANSI code page. The decoder implements
 * Windows-1252 and UTF-8 today; other pages are recognised here so the error can name them.
 */
#include "tds/tds_int.h"

/* Code page of a SQL collation sort id (SQL Server's sort orders), or 0 if unknown. */
static uint16_t sort_id_code_page(uint8_t id) {
  if (id >= 30 && id <= 35) return 437;
  if ((id >= 40 && id <= 45) || id == 49 || (id >= 55 && id <= 61)) return 850;
  if ((id >= 50 && id <= 54) || (id >= 71 && id <= 75) || (id >= 183 && id <= 186) ||
      (id >= 210 && id <= 217)) {
    return 1252;
  }
  if (id >= 80 && id <= 98) return 1250;
  if (id >= 104 && id <= 108) return 1251;
  if ((id >= 112 && id <= 114) || (id >= 120 && id <= 124)) return 1253;
  if (id >= 128 && id <= 130) return 1254;
  if (id >= 136 && id <= 138) return 1255;
  if (id >= 144 && id <= 146) return 1256;
  if (id >= 152 && id <= 160) return 1257;
  switch (id) {
    case 192:
    case 193:
    case 200: return 932;
    case 194:
    case 195:
    case 201: return 949;
    case 196:
    case 197:
    case 202: return 950;
    case 198:
    case 199:
    case 203: return 936;
    case 204:
    case 205:
    case 206: return 874;
    default: return 0;
  }
}

/* ANSI code page of a Windows locale's primary language (LCID & 0x3FF) with a few full LCID
 * exceptions, or 0 if unknown. */
static uint16_t lcid_code_page(uint32_t lcid) {
  switch (lcid) { /* locales whose code page differs from their language's */
    case 0x0C1A:  /* Serbian (Cyrillic) */
    case 0x201A:  /* Bosnian (Cyrillic) */
    case 0x082C:  /* Azeri (Cyrillic) */
    case 0x0843: /* Uzbek (Cyrillic) */ return 1251;
    case 0x0804: /* Chinese (PRC) */
    case 0x1004: /* Chinese (Singapore) */ return 936;
    case 0x0404: /* Chinese (Taiwan) */
    case 0x0C04: /* Chinese (Hong Kong) */
    case 0x1404: /* Chinese (Macao) */ return 950;
    default: break;
  }
  switch (lcid & 0x3FF) {
    case 0x01: return 1256; /* Arabic */
    case 0x02: return 1251; /* Bulgarian */
    case 0x03: return 1252; /* Catalan */
    case 0x05: return 1250; /* Czech */
    case 0x06: return 1252; /* Danish */
    case 0x07: return 1252; /* German */
    case 0x08: return 1253; /* Greek */
    case 0x09: return 1252; /* English */
    case 0x0A: return 1252; /* Spanish */
    case 0x0B: return 1252; /* Finnish */
    case 0x0C: return 1252; /* French */
    case 0x0D: return 1255; /* Hebrew */
    case 0x0E: return 1250; /* Hungarian */
    case 0x0F: return 1252; /* Icelandic */
    case 0x10: return 1252; /* Italian */
    case 0x11: return 932;  /* Japanese */
    case 0x12: return 949;  /* Korean */
    case 0x13: return 1252; /* Dutch */
    case 0x14: return 1252; /* Norwegian */
    case 0x15: return 1250; /* Polish */
    case 0x16: return 1252; /* Portuguese */
    case 0x18: return 1250; /* Romanian */
    case 0x19: return 1251; /* Russian */
    case 0x1A: return 1250; /* Croatian, Serbian (Latin) */
    case 0x1B: return 1250; /* Slovak */
    case 0x1C: return 1250; /* Albanian */
    case 0x1D: return 1252; /* Swedish */
    case 0x1E: return 874;  /* Thai */
    case 0x1F: return 1254; /* Turkish */
    case 0x20: return 1256; /* Urdu */
    case 0x21: return 1252; /* Indonesian */
    case 0x22: return 1251; /* Ukrainian */
    case 0x23: return 1251; /* Belarusian */
    case 0x24: return 1250; /* Slovenian */
    case 0x25: return 1257; /* Estonian */
    case 0x26: return 1257; /* Latvian */
    case 0x27: return 1257; /* Lithuanian */
    case 0x29: return 1256; /* Persian */
    case 0x2A: return 1258; /* Vietnamese */
    case 0x2C: return 1254; /* Azeri (Latin) */
    case 0x2D: return 1252; /* Basque */
    case 0x2F: return 1251; /* Macedonian */
    case 0x36: return 1252; /* Afrikaans */
    case 0x38: return 1252; /* Faroese */
    case 0x3E: return 1252; /* Malay */
    case 0x3F: return 1251; /* Kazakh */
    case 0x41: return 1252; /* Swahili */
    case 0x43: return 1254; /* Uzbek (Latin) */
    case 0x44: return 1251; /* Tatar */
    case 0x56: return 1252; /* Galician */
    default: return 0;
  }
}

uint16_t mc_tds_collation_code_page(const uint8_t collation[5]) {
  uint32_t info = mc_load_u32(collation);
  if (info & (1u << 26)) return MC_CP_UTF8;
  uint8_t sort_id = collation[4];
  if (sort_id != 0) return sort_id_code_page(sort_id);
  return lcid_code_page(info & 0xFFFFFu);
}
