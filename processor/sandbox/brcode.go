package sandbox

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// The Pix code and the boleto line are built here rather than by a
// library: no Go module for either is in the package lists, and each is a
// page of arithmetic from a public specification (the Central Bank's BR
// Code manual, Febraban's boleto layout).

// pixCode is a made-up but well-formed Pix "copia e cola" text: an EMV
// merchant-presented QR payload (ID, two-digit length, value) as the BR
// Code manual lays it out, with a random-looking EVP key and transaction
// id drawn from seed, the amount when the currency is BRL (Pix is BRL
// only; other currencies leave the amount for the payer to type), and the
// CRC16 that ends every BR Code.
func pixCode(seed string, amountMinor int64, currency string) string {
	evp := fmt.Sprintf("%s-%s-4%s-a%s-%s", seed[0:8], seed[8:12], seed[12:15], seed[15:18], seed[18:30])
	account := tlv("00", "br.gov.bcb.pix") + tlv("01", evp)
	var b strings.Builder
	b.WriteString(tlv("00", "01")) // payload format indicator
	b.WriteString(tlv("01", "12")) // point of initiation: single use
	b.WriteString(tlv("26", account))
	b.WriteString(tlv("52", "0000")) // merchant category code
	b.WriteString(tlv("53", "986"))  // BRL
	if currency == "BRL" && amountMinor > 0 {
		amount := fmt.Sprintf("%d.%02d", amountMinor/100, amountMinor%100)
		if len(amount) <= 13 {
			b.WriteString(tlv("54", amount))
		}
	}
	b.WriteString(tlv("58", "BR"))
	b.WriteString(tlv("59", "CMPAY SANDBOX"))
	b.WriteString(tlv("60", "SAO PAULO"))
	b.WriteString(tlv("62", tlv("05", "CMPAY"+strings.ToUpper(seed[:20]))))
	b.WriteString("6304")
	return b.String() + fmt.Sprintf("%04X", crc16CCITT([]byte(b.String())))
}

func tlv(id, value string) string { return fmt.Sprintf("%s%02d%s", id, len(value), value) }

// crc16CCITT is CRC-16/CCITT-FALSE (polynomial 0x1021, initial 0xFFFF, no
// reflection), the checksum the BR Code manual prescribes for field 63.
func crc16CCITT(data []byte) uint16 {
	crc := uint16(0xFFFF)
	for _, c := range data {
		crc ^= uint16(c) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}

// boletoBank is a bank code no bank has, so the line cannot be mistaken
// for a real one.
const boletoBank = "999"

// boletoLine is a made-up but well-formed boleto typeable line (linha
// digitável, 47 digits) for a barcode with boletoBank, currency 9 (real),
// the due date's factor, the amount (BRL only; 0 leaves it open) and a
// free field of 25 digits drawn from seed. Fields 1 to 3 end with their
// modulo-10 digit, field 4 is the barcode's modulo-11 digit.
func boletoLine(seed string, amountMinor int64, currency string, due time.Time) string {
	value := int64(0)
	if currency == "BRL" && amountMinor > 0 && amountMinor <= 9_999_999_999 {
		value = amountMinor
	}
	free := digitsFrom(seed, 25)
	tail := fmt.Sprintf("%04d%010d", dueFactor(due), value)
	// The barcode without its check digit: bank, currency, factor+value, free field.
	body := boletoBank + "9" + tail + free
	dv := mod11(body)
	f1 := boletoBank + "9" + free[0:5]
	f2 := free[5:15]
	f3 := free[15:25]
	return f1 + strconv.Itoa(mod10(f1)) + f2 + strconv.Itoa(mod10(f2)) + f3 + strconv.Itoa(mod10(f3)) +
		strconv.Itoa(dv) + tail
}

// dueFactor counts days from 1997-10-07; Febraban restarted the count at
// 1000 on 2025-02-22, the day it would have reached 10000.
func dueFactor(due time.Time) int {
	base := time.Date(1997, 10, 7, 0, 0, 0, 0, time.UTC)
	d := time.Date(due.Year(), due.Month(), due.Day(), 0, 0, 0, 0, time.UTC)
	days := int(d.Sub(base).Hours() / 24)
	if days >= 10000 {
		return 1000 + (days-10000)%9000
	}
	return days
}

// mod10 weighs the digits 2, 1, 2, 1… from the right, adds the digits of
// each product, and answers what brings the sum to a multiple of ten.
func mod10(digits string) int {
	sum := 0
	weight := 2
	for i := len(digits) - 1; i >= 0; i-- {
		p := int(digits[i]-'0') * weight
		sum += p/10 + p%10
		weight = 3 - weight
	}
	return (10 - sum%10) % 10
}

// mod11 is the barcode's general check digit: weights 2 to 9 from the
// right, 11 less the remainder, and 1 where that is 0, 10 or 11.
func mod11(digits string) int {
	sum := 0
	weight := 2
	for i := len(digits) - 1; i >= 0; i-- {
		sum += int(digits[i]-'0') * weight
		weight++
		if weight > 9 {
			weight = 2
		}
	}
	dv := 11 - sum%11
	if dv == 0 || dv == 10 || dv == 11 {
		return 1
	}
	return dv
}

// digitsFrom turns the hex seed into n decimal digits.
func digitsFrom(seed string, n int) string {
	var b strings.Builder
	for i := 0; b.Len() < n; i++ {
		c := seed[i%len(seed)]
		v := int(c - '0')
		if c >= 'a' {
			v = int(c-'a') + 10
		}
		b.WriteByte(byte('0' + (v+i)%10))
	}
	return b.String()
}
