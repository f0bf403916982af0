"""The words the facts floor (``statements.py``) reads kinds and refusals by: jobs, pets, relations, dates.

These are closed lists on purpose. The floor may only learn what a list lets it
name ("I'm a welder": a job; "I'm a mess": nothing), so a word missing here
costs a fact, never invents one. ``NOT_A_NAME`` is the other side: words that
follow "I'm" or "my dog" and read like a name to a pattern but are states,
places, nationalities or verbs ("I'm Home", "my dog sleeps").
"""

from __future__ import annotations


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


# "I'm a nurse", "I work as a welder": the jobs a bare "I'm a ..." may name. Ambiguous ones ("cook", "fan") stay out.
JOBS = _words("""
nurse teacher doctor welder chef baker barista waiter waitress bartender engineer developer programmer designer
architect accountant lawyer solicitor paralegal plumber electrician carpenter mechanic builder bricklayer roofer
painter decorator cleaner janitor caretaker receptionist secretary administrator manager supervisor librarian
pharmacist dentist vet veterinarian paramedic firefighter firefighter policeman policewoman officer detective
soldier pilot driver trucker courier postman postwoman farmer gardener landscaper florist butcher fishmonger
hairdresser barber stylist beautician therapist counselor counsellor psychologist psychiatrist physiotherapist
physio midwife surgeon radiographer optician carer caregiver nanny childminder tutor lecturer professor
researcher scientist chemist biologist physicist analyst consultant banker cashier clerk salesman saleswoman
journalist editor writer photographer translator interpreter actor actress musician dancer artist illustrator
animator tailor seamstress jeweller jeweler machinist technician surveyor estate agent realtor accountant
bookkeeper auditor economist statistician coder tester dispatcher paramedic sailor fisherman miner lifeguard
coach instructor trainer zookeeper groomer housekeeper porter steward stewardess concierge chauffeur
""")
# words that may stand before a job and belong to it ("a night nurse", "a software engineer")
JOB_MODIFIERS = _words("""
night day staff senior junior head trainee student registered charge ward school primary secondary
software web data civil mechanical electrical sous pastry line dental veterinary bicycle bike car van bus taxi
delivery hospital care support sales account project office retail freelance private personal yoga swim
dog graphic sound tattoo nursery maths math science english music art history
""")
SCHOOLS = frozenset({"school", "nursery", "college", "university", "academy"})
# where people go to exercise or learn as often as to work ("we started at the gym"): no workplace alone
LEISURE = frozenset({"gym", "studio", "centre", "center", "club", "pool"})
# what ends a workplace said in lowercase ("at st james's hospital", "at the bakery")
WORKPLACES = _words("""
hospital bakery cafe café shop store supermarket bank factory office warehouse restaurant hotel library garage
pub bar salon clinic surgery pharmacy school nursery college university academy gym studio agency firm
council station airport depot mill farm kitchen lab laboratory plant site centre center practice
""")

PETS = _words("dog cat puppy pup kitten bunny rabbit hamster parrot bird turtle tortoise horse pony ferret "
"budgie gecko lizard snake fish goldfish")
# breeds are kinds of their own ("a rescue greyhound called Biscuit": the pet is a greyhound)
BREEDS = _words("""
greyhound whippet lurcher beagle labrador lab retriever poodle cockapoo labradoodle spaniel cocker springer
terrier westie yorkie jack russell staffie staffy bulldog frenchie pug chihuahua dachshund sausage collie
sheepdog husky malamute shepherd alsatian rottweiler doberman boxer dalmatian corgi schnauzer shih tzu
pomeranian maltese bichon greyhound mastiff newfoundland akita shiba weimaraner vizsla pointer setter basset
bloodhound samoyed papillon tabby siamese persian ragdoll bengal sphynx maine coon
""")
# "our rescue greyhound", "my little dog": words that may stand between the owner and the kind
PET_ADJECTIVES = _words("rescue new little old baby sweet senior young big tiny fluffy lovely black white brown "
"ginger grey gray tabby stray adopted furry crazy lazy")

# one key each: a sister does not replace a brother, nor a mother a father
RELATIONS = {"sister": "sister", "sis": "sister", "brother": "brother", "bro": "brother", "mum": "mother",
"mom": "mother", "mother": "mother", "mam": "mother", "dad": "father", "father": "father",
"son": "son", "daughter": "daughter"}
PARTNERS = _words("husband hubby wife wifey boyfriend bf girlfriend gf partner fiance fiancé fiancee fiancée")
RELATIVE_ADJECTIVES = _words("little big older younger elder baby twin step half eldest youngest")

MONTHS = _words("january february march april may june july august september october november december "
"jan feb mar apr jun jul aug sep sept oct nov dec")
WEEKDAYS = _words("monday tuesday wednesday thursday friday saturday sunday mondays tuesdays wednesdays thursdays "
"fridays saturdays sundays weekend weekends")
# what a person announces with a date: "I have an interview on 2 May"
EVENTS = _words("interview exam exams appointment wedding surgery operation test audition concert gig flight trip "
"holiday vacation match race marathon presentation party scan viva graduation hearing recital "
"assessment induction")

# what a person does regularly ("I go swimming every morning", "yoga twice a week")
ACTIVITIES = _words("""
swimming running jogging cycling biking climbing bouldering walking hiking dancing singing painting drawing
knitting crocheting sewing baking cooking gardening writing skating skateboarding skiing snowboarding
surfing rowing boxing fishing sailing kayaking paddleboarding golfing bowling yoga pilates crossfit zumba karate
judo taekwondo jiujitsu kickboxing tennis football soccer basketball netball volleyball badminton squash
rugby cricket hockey golf chess pottery photography gym spin parkrun choir meditation
""")
# activities a person does regularly ("I go swimming every morning", "a saturday pottery class")
HOBBY_NOUNS = _words("class classes course lessons lesson club group team workshop")
REGULARLY = (r"(?:every|each) (?:morning|evening|night|day|week|weekend|month|"
r"(?:mon|tues|wednes|thurs|fri|satur|sun)day)"
r"|(?:\d+x|twice|once|three times|[0-9]+ times) (?:a|per|every) (?:day|week|month)"
r"|daily|weekly|on (?:mon|tues|wednes|thurs|fri|satur|sun)days|most (?:days|mornings|evenings)")

# Nationalities, faiths and signs: capitalized after "I'm" like a name, and never one.
DEMONYMS = _words("""
english british scottish welsh irish american canadian mexican brazilian argentinian chilean colombian peruvian
french german italian spanish portuguese dutch belgian swiss austrian swedish norwegian danish finnish polish
czech slovak hungarian romanian bulgarian greek turkish russian ukrainian serbian croatian bosnian albanian
chinese japanese korean vietnamese thai filipino indonesian malaysian indian pakistani bangladeshi nepali
sri lankan iranian iraqi syrian lebanese israeli palestinian egyptian moroccan algerian tunisian nigerian
ghanaian kenyan ethiopian somali south african australian kiwi jamaican cuban asian african european latino
latina hispanic black white mixed catholic christian muslim jewish hindu buddhist sikh atheist agnostic
protestant mormon vegan vegetarian gemini aries taurus cancer leo virgo libra scorpio sagittarius capricorn
aquarius pisces gay straight bi trans queer lesbian
""")
# Words that follow "I'm", "call me", "my sister" or "my dog" and are not names: states, places, verbs, fillers.
NOT_A_NAME = DEMONYMS | MONTHS | WEEKDAYS | _words("""
ok okay fine good great well bad sad mad glad happy tired exhausted knackered dead starving hungry thirsty sick
ill down up in out off on over home here there back done finished ready sorry sure so busy free late early
new old young alive awake asleep broke bored lost stuck confused scared afraid nervous anxious excited stressed
worried lonely alone cold hot warm full sleepy grumpy lucky blessed grateful thankful proud jealous angry upset
hurt injured pregnant single married engaged divorced retired unemployed employed famous rich poor fat thin
short tall right wrong serious kidding joking honest curious interested obsessed addicted allergic crazy dumb
stupid clever smart silly weird fun funny cool lazy useless hopeless terrible awful amazing awesome
brilliant perfect beautiful ugly pretty cute gorgeous lovely shy quiet loud calm chill fab gutted buzzing
living dying going coming leaving staying trying working looking getting doing having feeling thinking
about almost nearly totally literally actually basically honestly really very still just also too even
anytime anything anyone everyone someone nobody nothing something whatever whenever maybe later soon now
today tonight tomorrow yesterday crazy old-fashioned mum mom dad mother father sister brother friend friends
boss human person guy girl boy man woman lady kid kids baby adult
hi hello hey yo thanks thank please lol haha omg wow yes yeah yep no nope sorry btw
god jesus christ lord christmas easter xmas halloween uk us usa nhs
loves likes hates lives says works sleeps barks eats ate runs ran gets got keeps kept goes went comes came
wants needs seems looks has had was is does did makes made takes took sits sat plays played bit bites
walks walk walker sitter food treats treat toys toy bed bowl lead leash collar vet groomer park door crate
insurance hair friend friends years months weeks days pics photos pic photo breed mix cross puppy kitten
in-law inlaw law alright stoked hungover shattered sorted sound grand legit lit psyched pumped gone
sometime asap heartbroken cheap skint team fam bae babe mate dude bro sis hun love darling sweetie honey buddy pal
ya xd bb mr ms mrs dr ha ah oh uh um er eh ye
""")
# Verbs and words that may follow a lowercase name when the phrase is a clause's subject ("my sister jess lives ...")
FOLLOWS_A_NAME = _words("is was has had lives lived works worked loves loved just and who whos who's "
"came comes got gets moved turned started adopted joined texted called visited")

# States and traits ("hi im deaf", "I'm Sober"): never a name, capitalized or not. Words a lowercase name after a
# naming cue ("call me cynical", "my dog tbh is fine") is not: these, chat shorthand and the commonest small words.
# Without a cue a lowercase word is a name only where the person also typed it with a capital.
TRAITS = _words("""
deaf blind mute disabled diabetic autistic adhd dyslexic epileptic asthmatic bipolar depressed sober drunk high
stoned wasted tipsy female male nonbinary cis pregnant vegan cynical sceptical skeptical optimistic pessimistic
paranoid petty salty spicy savage basic extra mean kind brave strong weak fit unfit healthy unhealthy normal
odd strange different special simple average typical unlucky picky fussy messy tidy clumsy moody bossy nosy
nerdy geeky sporty arty crafty chatty lazy sensitive emotional dramatic hormonal cranky sick sore achy dizzy
""")
NOT_A_LOWERCASE_NAME = NOT_A_NAME | TRAITS | _words("""
tbh ngl smh def defo deffo fr frfr idk idc imo imho lowkey highkey af irl fyi brb ttyl omw nvm ikr wtf wth ffs
jk lmk hbu wbu tbf obvs obv prob probs srsly legit bestie bruh bro fam tho innit yh ye yea nah meh ugh
sigh yikes oops welp k kk ty thx pls plz rly btw lol lmao rofl omg
the a an and or but so too very much more less most least all any some none every each either neither
one two three four five six seven eight nine ten first last next other another same such own
this that these those what which who whom whose where when why how here there then now never always
is are was were be been being am do does did have has had will would can could shall should may might must
not no yes out off up down over under again once only just also even still yet already soon later
""")

# Places a person may type in lowercase ("i live in leeds", "moving to bristol in march"): a lowercase word after
# "live in" or "moving to" is read as a place only when it is one of these ("i live in hell", "moving to nights"
# are not). Capitalized, any place is read. The major cities of the UK, Ireland, the US, Canada, Australia and the
# world's capitals and largest cities, the countries and the UK's nations: a place missing here costs a fact.
PLACES = _words("""
london birmingham manchester leeds liverpool sheffield bristol newcastle nottingham leicester coventry bradford
stoke wolverhampton southampton portsmouth plymouth brighton northampton luton
bournemouth norwich swindon oxford cambridge york exeter preston blackpool
sunderland middlesbrough ipswich peterborough gloucester cheltenham worcester hereford carlisle
canterbury winchester salisbury chichester colchester chelmsford guildford watford slough croydon harrogate
huddersfield wakefield doncaster rotherham barnsley wigan stockport salford warrington blackburn burnley
truro torquay swansea cardiff newport wrexham aberystwyth edinburgh glasgow aberdeen dundee
inverness stirling belfast derry dublin galway limerick waterford kilkenny
nyc chicago boston seattle portland denver austin dallas houston atlanta miami orlando tampa phoenix
philadelphia pittsburgh baltimore detroit cleveland cincinnati indianapolis milwaukee minneapolis
nashville memphis louisville charlotte raleigh sacramento oakland brooklyn manhattan queens
toronto vancouver montreal ottawa calgary edmonton winnipeg
sydney melbourne brisbane adelaide canberra hobart auckland wellington christchurch
paris berlin madrid barcelona lisbon porto rome milan naples turin florence venice vienna prague budapest warsaw
krakow amsterdam rotterdam brussels antwerp copenhagen stockholm oslo helsinki reykjavik athens istanbul
ankara zurich geneva munich hamburg frankfurt cologne lyon marseille seville valencia bucharest sofia
belgrade zagreb ljubljana bratislava vilnius riga tallinn kyiv kiev moscow
tokyo osaka kyoto seoul beijing shanghai singapore bangkok manila jakarta delhi mumbai bangalore
chennai kolkata hyderabad karachi lahore dhaka dubai doha riyadh tehran cairo lagos nairobi accra johannesburg
cairo casablanca marrakech tunis mexico bogota lima santiago quito caracas havana
england scotland wales ireland britain uk usa america canada australia france germany spain portugal
italy greece netherlands holland belgium switzerland austria denmark sweden norway finland iceland
poland czechia hungary romania bulgaria croatia serbia ukraine russia china japan korea india pakistan
bangladesh thailand vietnam indonesia malaysia philippines nigeria ghana kenya ethiopia egypt morocco
brazil argentina chile colombia peru venezuela cuba jamaica texas california florida
""") | {
    "new york", "los angeles", "san francisco", "san diego", "las vegas", "new orleans", "hong kong", "cape town",
    "new zealand", "milton keynes", "buenos aires", "kuala lumpur", "tel aviv", "mexico city", "new delhi"}
